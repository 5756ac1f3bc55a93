// Hardening: hostile tools, bad files and other users (docs/SECURITY.md). Each test here failed on
// the code before the fix it names.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/evidence.h"
#include "host/bundle.h"
#include "host/local_host.h"
#include "host/redact.h"
#include "testutil.h"
#include "util/files.h"
#include "util/strings.h"

namespace fs = std::filesystem;
using nlohmann::json;
using namespace clustermax;
namespace cmt = clustermax::testing;

namespace {

fs::path Scratch(const std::string& name) { return cmt::ScratchDir("hardening-" + name); }
cmt::Shell Cli(const std::string& args, const std::string& env = "") { return cmt::RunBinary(args, env); }

void WriteText(const fs::path& p, const std::string& text, unsigned mode = 0644) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
  fs::permissions(p, static_cast<fs::perms>(mode));
}

unsigned ModeOf(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

// A stub tool directory put first in PATH.
fs::path StubTools(const fs::path& dir, const std::map<std::string, std::string>& scripts) {
  fs::path bin = dir / "stub-bin";
  fs::create_directories(bin);
  for (const auto& [name, body] : scripts) WriteText(bin / name, "#!/bin/sh\n" + body + "\n", 0755);
  return bin;
}

bool HasRawEscape(const std::string& s) {
  for (char c : s) {
    if (c == '\x1b' || c == '\r' || c == '\x9b') return true;
  }
  return false;
}

}  // namespace

// ---- strings from the machine are bytes until validated ----

TEST(Utf8, StrictValidationRejectsOverlongAndSurrogates) {
  EXPECT_TRUE(util::IsValidUtf8("plain ascii, caf\xc3\xa9, \xe2\x82\xac, \xf0\x9f\x98\x80"));
  EXPECT_FALSE(util::IsValidUtf8("6.1.\377"));
  EXPECT_FALSE(util::IsValidUtf8("\xc0\x80"));          // overlong NUL: nlohmann refuses to write it
  EXPECT_FALSE(util::IsValidUtf8("\xed\xa0\x80"));      // a UTF-16 surrogate
  EXPECT_FALSE(util::IsValidUtf8("\xf4\x90\x80\x80"));  // past U+10FFFF
  EXPECT_FALSE(util::IsValidUtf8("\xe2\x82"));          // cut short
}

TEST(Utf8, SanitizeReplacesAndFlags) {
  bool replaced = false;
  EXPECT_EQ(util::SanitizeUtf8("6.1.\377", &replaced), "6.1.\xef\xbf\xbd");
  EXPECT_TRUE(replaced);
  replaced = false;
  EXPECT_EQ(util::SanitizeUtf8("caf\xc3\xa9", &replaced), "caf\xc3\xa9");
  EXPECT_FALSE(replaced);
}

TEST(Utf8, EvidenceFromAToolIsSanitizedAndFlagged) {
  core::Evidence e;
  e.data = {{"version", "6.1.\377"}, {"nested", {{"k\xff", json::array({"ok", "bad\xc0\x80"})}}}};
  e.error = "broken \xfe";
  core::SanitizeEvidence(e);
  EXPECT_TRUE(e.invalid_utf8);
  EXPECT_NO_THROW((void)json(e).dump());  // the strict writer no longer throws
  EXPECT_EQ(e.data["version"], "6.1.\xef\xbf\xbd");
  EXPECT_TRUE(json(e).contains("invalid_utf8"));
}

TEST(TerminalSafe, ControlCharactersAreEscaped) {
  std::string hostile = "node1\x1b[2K\rPASS all good\x9b\xc2\x9b\xe2\x80\xae";
  std::string safe = util::EscapeControls(hostile);
  EXPECT_FALSE(HasRawEscape(safe)) << safe;
  EXPECT_NE(safe.find("\\x1b[2K\\rPASS"), std::string::npos) << safe;
  EXPECT_NE(safe.find("\\u009b"), std::string::npos) << safe;  // C1 CSI as a character
  EXPECT_NE(safe.find("\\u202e"), std::string::npos) << safe;  // right-to-left override
  EXPECT_EQ(util::EscapeControls("a\tb"), "a\tb");
  EXPECT_EQ(util::TerminalSafeText("one\ntwo\x1b[31m\n"), "one\ntwo\\x1b[31m\n");
  EXPECT_EQ(util::EscapeControls("line\nfake"), "line\\nfake");
}

// Item 1: a tool printing one non-UTF-8 byte lost the whole audit ("invalid UTF-8 byte", exit 1,
// no report, a .partial directory left behind).
TEST(Hardening, NonUtf8ToolOutputKeepsTheAudit) {
  fs::path d = Scratch("utf8");
  fs::path bin = StubTools(
      d, {{"perf", "printf 'perf version 6.1.\\377\\n'"},
          {"nvidia-smi", "printf 'NVIDIA-SMI has failed \\376\\377 because it could not communicate\\n' >&2; exit 9"}});
  auto r = Cli("audit --standalone --yes --out " + (d / "run").string() + " --record " + (d / "node.json").string(),
               "PATH=" + bin.string() + ":$PATH");
  EXPECT_TRUE(r.code == 0 || r.code == 2) << r.out;
  ASSERT_TRUE(fs::exists(d / "run" / "report.json")) << r.out;
  for (const auto& e : fs::directory_iterator(d))
    EXPECT_EQ(e.path().filename().string().find(".partial"), std::string::npos) << e.path();
  json report = util::ParseJsonDocument(*util::ReadLocalFile(d / "run" / "report.json"), "report");
  EXPECT_EQ(report["tool"]["name"], "clustermax");
  // The bundle keeps the tool's exact bytes (hex), so a replay sees what the node printed.
  host::Bundle b = host::Bundle::Load(d / "node.json");
  auto perf = b.Command({"perf", "--version"});
  if (perf) EXPECT_NE(perf->out.find("6.1.\377"), std::string::npos);
}

// Item 2: replaying such a bundle with --json aborted (an exception unwound past a thread that was
// never joined).
TEST(Hardening, ReplayWithNonUtf8AndJsonDoesNotAbort) {
  fs::path d = Scratch("replay-json");
  json b = util::ParseJsonDocument(cmt::ReadFixture("bundles/debian12-container-cpu.json"), "fixture");
  b["manifest"]["hostname"] = "node\xef\xbf\xbd-1";
  for (auto& c : b["commands"]) {
    c["stdout"] = util::HexEncode("weird \377\376 output\n");
    c["stdout_encoding"] = "hex";
  }
  util::WriteFileAtomic(d / "b.json", util::JsonText(b));
  auto r = Cli("audit --replay " + (d / "b.json").string() + " --json");
  EXPECT_TRUE(r.code == 0 || r.code == 2) << r.code << r.out.substr(0, 2000);
  EXPECT_NE(r.out.find("\"schema_version\""), std::string::npos);
}

// Item 3: deep, endless and blocking inputs.
TEST(Hardening, DeepJsonIsRefusedWithTheLimitNamed) {
  std::string deep(100000, '[');
  deep += std::string(100000, ']');
  try {
    util::ParseJsonDocument(deep, "report.json");
    FAIL() << "a 100,000-deep document was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("256"), std::string::npos) << e.what();
  }
  EXPECT_THROW(host::ParseJson(deep), host::BundleError);
  EXPECT_EQ(util::JsonNestingDepth(R"({"a": "[[[[", "b": [1, {"c": []}]})", 256), 4);
}

TEST(Hardening, DbIngestOfADeepReportFailsCleanly) {
  fs::path d = Scratch("deep-ingest");
  std::string deep = "{\"schema_version\": 1, \"x\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  WriteText(d / "run" / "report.json", deep);
  auto r = Cli("db --db " + (d / "r.db").string() + " ingest " + (d / "run").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("nested deeper than 256"), std::string::npos) << r.out;
  auto rate = Cli("rate " + (d / "run").string());
  EXPECT_EQ(rate.code, 1) << rate.out;
  EXPECT_NE(rate.out.find("nested deeper than 256"), std::string::npos) << rate.out;
}

TEST(Hardening, ReplayOfDevZeroAndAFifoIsRefusedAtOnce) {
  fs::path d = Scratch("fifo");
  ASSERT_EQ(::mkfifo((d / "pipe").c_str(), 0600), 0);
  auto t0 = std::chrono::steady_clock::now();
  auto z = Cli("audit --replay /dev/zero");
  auto f = Cli("audit --replay " + (d / "pipe").string());
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(z.code, 1) << z.out;
  EXPECT_NE(z.out.find("not a regular file"), std::string::npos) << z.out;
  EXPECT_EQ(f.code, 1) << f.out;
  EXPECT_NE(f.out.find("not a regular file"), std::string::npos) << f.out;
  EXPECT_LT(secs, 20);
  EXPECT_THROW(util::ReadLocalFile(d / "pipe"), std::runtime_error);
  WriteText(d / "big", std::string(4096, 'x'));
  try {
    util::ReadLocalFile(d / "big", 1024);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("limit of 1024 bytes"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(util::ReadLocalFile(d / "absent"));
}

// Item 6: the atomic writer opened PATH.tmp.<pid> with O_CREAT|O_TRUNC and followed a planted link.
TEST(Hardening, AtomicWriteNeverFollowsAPlantedLink) {
  fs::path d = Scratch("symlink");
  WriteText(d / "victim", "precious\n");
  fs::path out = d / "rating.json";
  fs::create_symlink(d / "victim", fs::path(out.string() + ".tmp." + std::to_string(::getpid())));  // the old name
  fs::create_symlink(d / "victim", out);                                                            // the target itself
  util::WriteFileAtomic(out, "{}\n");
  EXPECT_EQ(*util::ReadLocalFile(d / "victim"), "precious\n");
  EXPECT_FALSE(fs::is_symlink(out));
  EXPECT_EQ(*util::ReadLocalFile(out), "{}\n");
  EXPECT_EQ(ModeOf(out), 0600u);
}

// The run directory's evidence files are written once, without a temporary name: a name planted
// as a link or a file is refused, never followed or overwritten; the file is private whatever the umask.
TEST(Hardening, NewFilesNeverFollowOrReplaceAPlantedName) {
  fs::path d = Scratch("newfile");
  WriteText(d / "victim", "precious\n");
  fs::create_symlink(d / "victim", d / "n1.json");
  EXPECT_THROW(util::WriteNewFile(d / "n1.json", "{}\n"), std::runtime_error);
  EXPECT_EQ(*util::ReadLocalFile(d / "victim"), "precious\n");
  EXPECT_THROW(util::WriteNewFile(d / "victim", "{}\n"), std::runtime_error);
  EXPECT_EQ(*util::ReadLocalFile(d / "victim"), "precious\n");
  mode_t old = ::umask(0);
  util::WriteNewFile(d / "n2.json", "{}\n");
  ::umask(old);
  EXPECT_EQ(*util::ReadLocalFile(d / "n2.json"), "{}\n");
  EXPECT_EQ(ModeOf(d / "n2.json"), 0600u);
  util::SyncFilesystemOf(d);
  EXPECT_THROW(util::SyncFilesystemOf(d / "n2.json"), std::runtime_error);  // not a directory
}

TEST(Hardening, PrivateDirectoriesAndTightenedStateDir) {
  fs::path d = Scratch("modes");
  util::CreatePrivateDirectories(d / "a" / "b");
  EXPECT_EQ(ModeOf(d / "a"), 0700u);
  EXPECT_EQ(ModeOf(d / "a" / "b"), 0700u);
  fs::create_directories(d / "home" / ".clustermax");
  fs::permissions(d / "home" / ".clustermax", static_cast<fs::perms>(0755));
  auto r = Cli("audit --standalone --yes --check security-runc", "HOME=" + (d / "home").string());
  EXPECT_TRUE(r.code == 0 || r.code == 2) << r.out;
  EXPECT_EQ(ModeOf(d / "home" / ".clustermax"), 0700u);
  for (const auto& run : fs::directory_iterator(d / "home" / ".clustermax" / "runs")) {
    EXPECT_EQ(ModeOf(run.path()), 0700u);
    EXPECT_EQ(ModeOf(run.path() / "report.json"), 0600u);
    for (const auto& ev : fs::directory_iterator(run.path() / "evidence")) EXPECT_EQ(ModeOf(ev.path()), 0600u);
  }
}

// Item 4: secrets planted in every secret-bearing file of a sysroot never reach an output.
TEST(Redaction, KnownFilesAndKeys) {
  using host::RedactCommandLine;
  using host::RedactFile;
  EXPECT_EQ(RedactFile("/etc/sssd/sssd.conf", "[domain/x]\nid_provider = ldap\nldap_default_authtok = S3cr3t!\n"),
            "[domain/x]\nid_provider = ldap\nldap_default_authtok = <redacted>\n");
  std::string sm = RedactFile("/etc/opensm/opensm.conf",
                              "m_key 0x1234abcd\nsm_key 0x0000000000000000\nsa_key 0xfeed\nm_key_protection_level 2\n");
  EXPECT_EQ(sm, "m_key <redacted>\nsm_key 0x0000000000000000\nsa_key <redacted>\nm_key_protection_level 2\n");
  EXPECT_EQ(RedactFile("/etc/slurm/slurmdbd.conf", "StorageUser=slurm\nStoragePass=hunter2\n"),
            "StorageUser=slurm\nStoragePass=<redacted>\n");
  EXPECT_EQ(RedactFile("/root/.docker/config.json", "{\"auths\": {\"r\": {\"auth\": \"dXNlcjpwdw==\"}}}"),
            "{\"auths\": {\"r\": {\"auth\": \"dXNlcjpwdw==\"}}}");  // one line of JSON: see the pretty form below
  EXPECT_EQ(RedactFile("/root/.docker/config.json",
                       "{\n  \"auths\": {\n    \"r\": {\n      \"auth\": \"dXNlcjpwdw==\"\n    }\n  }\n}\n"),
            "{\n  \"auths\": {\n    \"r\": {\n      \"auth\": \"<redacted>\"\n    }\n  }\n}\n");
  using namespace std::string_literals;
  EXPECT_EQ(RedactFile("/proc/42/environ", "PATH=/bin\0AWS_SECRET_ACCESS_KEY=abc\0DCGM_X=1"s),
            "PATH=/bin\0AWS_SECRET_ACCESS_KEY=<redacted>\0DCGM_X=1"s);
  EXPECT_EQ(RedactFile("/proc/42/cmdline", "exporter\0--db-password\0pw1\0-f\0x"s),
            "exporter\0--db-password\0<redacted>\0-f\0x"s);
  // A shell command line (bench infer's --server-cmd) by the same argument rules.
  EXPECT_EQ(RedactCommandLine("HF_TOKEN=hf_abc vllm serve m  --api-key sk-1 --port 8000 --hf-token=xyz --api-key -v"),
            "HF_TOKEN=<redacted> vllm serve m --api-key <redacted> --port 8000 --hf-token=<redacted> --api-key -v");
  EXPECT_EQ(RedactFile("/etc/systemd/system/x.service", "ExecStart=/usr/bin/x --api-token=abc123 --port 9400\n"),
            "ExecStart=/usr/bin/x --api-token=<redacted> --port 9400\n");
  EXPECT_EQ(RedactFile("/root/.netrc", "machine h login u password p4ss\n"), "machine h login u password <redacted>\n");
  EXPECT_NE(RedactFile("/etc/shadow", "root:$6$salt$hash:19000:0:99999:7:::\n").find("<redacted>"), std::string::npos);
  EXPECT_EQ(RedactFile("/etc/shadow", "root:$6$salt$hash:19000:0:99999:7:::\n").find("$6$"), std::string::npos);
  std::string pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----\n";
  EXPECT_EQ(host::RedactText(pem),
            "-----BEGIN OPENSSH PRIVATE KEY-----\n<redacted>\n-----END OPENSSH PRIVATE KEY-----\n");
  // Not secrets: left alone, so checks keep their facts.
  EXPECT_EQ(RedactFile("/etc/ssh/sshd_config", "PasswordAuthentication no\nPermitRootLogin no\n"),
            "PasswordAuthentication no\nPermitRootLogin no\n");
  EXPECT_EQ(RedactFile("/etc/pam.d/common-password", "password requisite pam_pwquality.so retry=3\n"),
            "password requisite pam_pwquality.so retry=3\n");
  EXPECT_FALSE(host::IsSecretName("m_key_protection_level"));
  EXPECT_TRUE(host::IsSecretName("AccountingStoragePass"));
  EXPECT_EQ(host::RedactEnv("AWS_SECRET_ACCESS_KEY", "abc"), "<redacted>");
  EXPECT_EQ(host::RedactEnv("NCCL_IB_HCA", "mlx5_0"), "mlx5_0");
  EXPECT_EQ(host::RedactEnv("CLUSTERMAX_S3_ENDPOINT", "http://user:pw@s3.local:9000/x"), "http://s3.local:9000/x");
  EXPECT_EQ(host::RedactText("url = https://bot:ghp_token@git.example.com/repo\n"),
            "url = https://***@git.example.com/repo\n");
  EXPECT_EQ(host::RedactArg("--s3-endpoint=http://u:p@h"), "--s3-endpoint=http://***@h");
}

TEST(Redaction, PlantedSecretsNeverLeaveTheNode) {
  fs::path d = Scratch("secrets");
  fs::path root = d / "sysroot";
  const std::string secrets[] = {"LDAPBINDSECRET1",  "0xC0FFEE00C0FFEE01", "0xC0FFEE00C0FFEE02", "0xC0FFEE00C0FFEE03",
                                 "DBSTORAGESECRET4", "NSLCDBINDSECRET5",   "SHADOWHASHSECRET6",  "MUNGEKEYSECRET7",
                                 "JOBCOMPSECRET8",   "S3URLPASSWORD9"};
  WriteText(
      root / "etc/sssd/sssd.conf",
      "[sssd]\nservices = nss\n[domain/corp]\nid_provider = ldap\nldap_default_bind_dn = cn=x\nldap_default_authtok = LDAPBINDSECRET1\n",
      0600);
  WriteText(
      root / "etc/opensm/opensm.conf",
      "m_key 0xC0FFEE00C0FFEE01\nsm_key 0xC0FFEE00C0FFEE02\nsa_key 0xC0FFEE00C0FFEE03\nm_key_protection_level 2\n",
      0600);
  WriteText(root / "etc/slurm/slurmdbd.conf", "StorageType=accounting_storage/mysql\nStoragePass=DBSTORAGESECRET4\n",
            0600);
  WriteText(root / "etc/slurm/slurm.conf",
            "ClusterName=c\nJobCompPass=JOBCOMPSECRET8\nAccountingStoragePass=DBSTORAGESECRET4\n");
  WriteText(root / "etc/nslcd.conf", "uri ldap://x\nbindpw NSLCDBINDSECRET5\n", 0600);
  WriteText(root / "etc/shadow", "root:SHADOWHASHSECRET6:19000:0:99999:7:::\n", 0600);
  WriteText(root / "etc/munge/munge.key", "MUNGEKEYSECRET7", 0400);
  WriteText(root / "etc/hostname", "secrets-node\n");
  auto r =
      Cli("audit --sysroot " + root.string() + " --standalone --yes -vvv --out " + (d / "run").string() + " --record " +
          (d / "node.json").string() +
          " --probe s3-probe --timeout probe.s3=2 --s3-bucket b --s3-endpoint http://user:S3URLPASSWORD9@127.0.0.1:9");
  EXPECT_TRUE(r.code == 0 || r.code == 2) << r.out;
  auto j = Cli("audit --replay " + (d / "node.json").string() + " --json");
  std::string everything = r.out + j.out;
  for (const auto& e : fs::recursive_directory_iterator(d)) {
    if (e.is_regular_file() && e.path().string().find("/sysroot/") == std::string::npos)
      everything += *util::ReadLocalFile(e.path());
  }
  // The collectors did read them (the redacted keys are in the bundle), and no value survived.
  EXPECT_NE(everything.find("ldap_default_authtok"), std::string::npos);
  EXPECT_NE(everything.find("<redacted>"), std::string::npos);
  for (const auto& s : secrets) EXPECT_EQ(everything.find(s), std::string::npos) << s << " leaked";
  EXPECT_EQ(ModeOf(d / "node.json"), 0600u);
  EXPECT_EQ(ModeOf(d / "run"), 0700u);
}

// Item 5: a host name or tool string holding ESC [2K CR rubbed out a FAIL line and printed PASS.
TEST(Hardening, EscapesFromEvidenceNeverReachTheTerminal) {
  fs::path d = Scratch("escapes");
  json b = util::ParseJsonDocument(cmt::ReadFixture("bundles/debian12-container-cpu.json"), "fixture");
  b["manifest"]["hostname"] = "evil\x1b[2K\r  PASS everything-fine";
  for (auto& c : b["commands"]) {
    if (c.contains("stdout") && !c.contains("stdout_encoding"))
      c["stdout"] = c["stdout"].get<std::string>() + "\x1b]0;owned\x07\x1b[2K\r";
  }
  util::WriteFileAtomic(d / "b.json", util::JsonText(b));
  for (const char* v : {"", " -v", " -vv", " -vvv"}) {
    auto r = Cli(std::string("audit --no-color --replay ") + (d / "b.json").string() + v);
    EXPECT_TRUE(r.code == 0 || r.code == 2) << r.out;
    EXPECT_FALSE(HasRawEscape(r.out)) << v;
    EXPECT_EQ(r.out.find('\x07'), std::string::npos) << v;
  }
  auto review =
      Cli(std::string("audit review ") + (d / "b.json").string() + " --command 'find ' --command 'show security-runc'");
  EXPECT_FALSE(HasRawEscape(review.out));
}

// Item 10: a bundle with no evidence at all gave FAIL "missing" for four checks.
TEST(Hardening, EmptyBundleIsAnEvidenceError) {
  fs::path d = Scratch("empty-bundle");
  json b = {{"format", "clustermax-evidence-bundle"},
            {"format_version", 1},
            {"manifest", {{"hostname", "n1"}, {"started_at", "2026-11-30T00:00:00Z"}, {"target", "standalone"}}},
            {"files", json::object()},
            {"dirs", json::object()},
            {"stats", json::object()},
            {"commands", json::array()},
            {"which", json::object()},
            {"env", json::object()},
            {"nvml", nullptr}};
  util::WriteFileAtomic(d / "empty.json", b.dump());
  auto r = Cli("audit --replay " + (d / "empty.json").string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("holds no evidence"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
}

// Item 5, the store and the rating: a report whose strings hold terminal escapes is listed, shown
// and rated with the escapes visible, never executed.
TEST(Hardening, StoreAndRatingEscapeWhatTheyPrint) {
  fs::path d = Scratch("escapes-store");
  json report = util::ParseJsonDocument(cmt::ReadFixture("../golden/debian12-container-cpu.json"), "golden");
  report["nodes"] = json::array({"evil\x1b[2K\r  PASS"});
  for (auto& r : report["results"]) {
    r["message"] = r["message"].get<std::string>() + "\x1b[2K\rPASS all fine\x9b";
    for (auto& n : r["nodes"]) n["node"] = "evil\x1b[2K\r";
  }
  fs::create_directories(d / "run");
  util::WriteFileAtomic(d / "run" / "report.json", util::JsonText(report));
  std::string db = " --db " + (d / "r.db").string();
  auto ingest = Cli("db" + db + " ingest " + (d / "run").string() + " --provider 'Evil\x1b[31mCloud'");
  ASSERT_EQ(ingest.code, 0) << ingest.out;
  auto list = Cli("db" + db + " list");
  auto show = Cli("db" + db + " show 1");
  auto rate = Cli("rate " + (d / "run").string() + " -v");
  for (const auto* r : {&ingest, &list, &show, &rate}) {
    EXPECT_FALSE(HasRawEscape(r->out)) << r->out.substr(0, 3000);
  }
  EXPECT_NE(show.out.find("\\x1b[2K"), std::string::npos) << show.out.substr(0, 2000);
}

// The PEM rule on text where a key sits inside one line (JSON with escaped newlines, framed
// documents) or where an armour line stands alone: only the key body goes, nothing else.
TEST(Redaction, PemInsideOneLineAndLoneArmourLines) {
  std::string json_line =
      "{\"k\": \"-----BEGIN PRIVATE KEY-----\\nMIIEv\\n-----END PRIVATE KEY-----\\n\", \"x\": 1}\nnext line\n";
  EXPECT_EQ(host::RedactText(json_line),
            "{\"k\": \"-----BEGIN PRIVATE KEY-----<redacted>-----END PRIVATE KEY-----\\n\", \"x\": 1}\nnext line\n");
  std::string log = "sshd: loaded -----BEGIN OPENSSH PRIVATE KEY----- marker\nline 2\nline 3\n";
  EXPECT_EQ(host::RedactText(log), log);
}
