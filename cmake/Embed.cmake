# embed_file(INPUT SYMBOL OUTPUT): writes OUTPUT, a C++ file defining
#   extern const std::string_view SYMBOL;  with INPUT's bytes. Regenerated when INPUT changes.
function(embed_file input symbol output)
  add_custom_command(
    OUTPUT ${output}
    COMMAND ${CMAKE_COMMAND} -DINPUT=${input} -DSYMBOL=${symbol} -DOUTPUT=${output}
            -P ${CMAKE_SOURCE_DIR}/cmake/EmbedRun.cmake
    DEPENDS ${input} ${CMAKE_SOURCE_DIR}/cmake/EmbedRun.cmake
    COMMENT "Embedding ${input}")
endfunction()
