#!/usr/bin/env python3
"""Kubernetes audit at 1,000 nodes (prints a table; never a timed unit test).

No API server runs here, so a stand-in serves a recorded cluster grown to --nodes GPU nodes: the
gpu-operator fixture cluster (tests/fixtures/k8s/gpu-operator, sources in SOURCES.md there) with
its GPU node object copied under new names, and its pods copied onto every node. It answers as
the API server does for what the audit asks (lists paged by limit/continue, access reviews
allowed, objects created and deleted), and a DaemonSet's pods all finish at once, each pod's log
being the bundle the real `clustermax collect` printed on this machine, re-addressed to the node
(hostname and frame key), as tests/k8s_api_server.h does in the tests.

1. `clustermax audit --k8s --yes` without an image: the cluster checks through the API and the
   node listing (what the cluster checks cost at that size), --runs times: median wall and peak RSS.
2. With --fanout: `audit --k8s --yes --k8s-image ...`: also the DaemonSet, the pods' states and
   every node's log read, judged and saved: wall time, CPU and peak RSS.

Usage: bench/k8s_bench.py [--binary build/clustermax] [--nodes 1000] [--runs 5] [--fanout]
"""
import argparse, base64, copy, json, os, shutil, statistics, subprocess, sys, tempfile, threading, zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from audit_bench import measure

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURE = os.path.join(ROOT, "tests", "fixtures", "k8s")
CHUNK = 800  # util::kFrameChunk


def grow(cluster, nodes):
    """The gpu-operator cluster with `nodes` GPU nodes (copies of its first GPU node) and its pods
    on each of them: {path: object} for the paths that change."""
    nl = json.load(open(os.path.join(cluster, "api/v1/nodes.json")))
    gpu = next(n for n in nl["items"] if "nvidia.com/gpu" in n["status"].get("allocatable", {}))
    others = [n for n in nl["items"] if "nvidia.com/gpu" not in n["status"].get("allocatable", {})]
    names = [f"gpu-{i:04d}" for i in range(nodes)]
    items = list(others)
    for name in names:
        n = copy.deepcopy(gpu)
        n["metadata"]["name"] = name
        n["metadata"].setdefault("labels", {})["kubernetes.io/hostname"] = name
        items.append(n)
    nl["items"] = items
    pl = json.load(open(os.path.join(cluster, "api/v1/pods.json")))
    on_gpu = [p for p in pl["items"] if p.get("spec", {}).get("nodeName") == gpu["metadata"]["name"]]
    pods = [p for p in pl["items"] if p.get("spec", {}).get("nodeName") != gpu["metadata"]["name"]]
    for name in names:
        for p in on_gpu:
            q = copy.deepcopy(p)
            q["metadata"]["name"] = f'{p["metadata"]["name"]}-{name}'
            q["spec"]["nodeName"] = name
            pods.append(q)
    pl["items"] = pods
    return {"/api/v1/nodes": nl, "/api/v1/pods": pl}, names


def frames(template_doc, node):
    """The framed lines `collect` prints on `node`: the template bundle re-addressed to it."""
    b = json.loads(template_doc)
    b["manifest"]["hostname"] = node
    text = "z1:" + base64.b64encode(zlib.compress(json.dumps(b, ensure_ascii=True, separators=(",", ":")).encode(), 6)).decode()
    count = max(1, (len(text) + CHUNK - 1) // CHUNK)
    return "".join(f"CLUSTERMAX-BUNDLE {node} {k} {count} {text[k * CHUNK:(k + 1) * CHUNK]}\n" for k in range(count))


def unframe(out):
    """The one document in `collect`'s output (JSON text)."""
    parts = {}
    for line in out.splitlines():
        f = line.split(" ", 4)
        if len(f) == 5 and f[0] == "CLUSTERMAX-BUNDLE":
            parts[int(f[2])] = f[4]
    text = "".join(parts[k] for k in sorted(parts))
    return zlib.decompress(base64.b64decode(text[3:])).decode() if text.startswith("z1:") else text


class Api:
    def __init__(self, cluster, grown, template_doc):
        self.cluster, self.grown, self.template = cluster, grown, template_doc
        self.created, self.logs, self.lock = {}, {}, threading.Lock()

    def file(self, path):
        for root in (self.cluster, os.path.join(FIXTURE, "common")):
            f = os.path.join(root, path.lstrip("/") + ".json")
            if ".." not in path and os.path.isfile(f):
                return json.load(open(f))
        return None

    def pods(self, ns):
        items = []
        for at, obj in list(self.created.items()):
            if obj.get("kind") != "DaemonSet" or f"/namespaces/{ns}/" not in at:
                continue
            terms = obj["spec"]["template"]["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
            for node in terms[0]["matchFields"][0]["values"]:
                items.append({"apiVersion": "v1", "kind": "Pod",
                              "metadata": {"name": f'{obj["metadata"]["name"]}-{node}', "namespace": ns,
                                           "labels": obj["spec"]["template"]["metadata"]["labels"]},
                              "spec": {"nodeName": node},
                              "status": {"phase": "Running", "initContainerStatuses": [
                                  {"name": "collect", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}})
        return {"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": items}

    def get(self, path, query):
        with self.lock:
            if path in self.created:
                return 200, self.created[path]
        if path.endswith("/log"):
            pod = path.split("/")[-2]  # "<daemonset>-<node>"; the run's name holds no "gpu-"
            node = pod[pod.index("gpu-"):] if "gpu-" in pod else pod
            if node not in self.logs:
                self.logs[node] = frames(self.template, node)
            return 200, self.logs[node]
        if path.startswith("/api/v1/namespaces/") and path.endswith("/pods") and path.split("/")[4] == "clustermax":
            doc = self.pods("clustermax")
        elif path.endswith("/events"):
            doc = {"kind": "EventList", "items": []}
        else:
            doc = self.grown.get(path) or self.file(path)
        if doc is None:
            return 404, {"kind": "Status", "status": "Failure", "reason": "NotFound", "code": 404, "message": "not found"}
        if "limit" not in query or not isinstance(doc.get("items"), list):
            return 200, doc
        limit, offset = int(query["limit"][0]), int(query.get("continue", ["page-0"])[0].rsplit("-", 1)[1])
        page = dict(doc)
        page["items"] = doc["items"][offset:offset + limit]
        page["metadata"] = dict(doc.get("metadata") or {})
        if offset + limit < len(doc["items"]):
            page["metadata"]["continue"] = f"page-{offset + limit}"
            page["metadata"]["remainingItemCount"] = len(doc["items"]) - offset - limit
        return 200, page

    def post(self, path, body):
        obj = json.loads(body or b"{}")
        if path.endswith("/selfsubjectaccessreviews"):
            obj["status"] = {"allowed": True}
            return 201, obj
        at = path + "/" + obj["metadata"]["name"]
        with self.lock:
            if at in self.created:
                return 409, {"kind": "Status", "status": "Failure", "reason": "AlreadyExists", "code": 409, "message": "exists"}
            self.created[at] = obj
        return 201, obj

    def delete(self, path):
        with self.lock:
            self.created = {k: v for k, v in self.created.items() if k != path and not k.startswith(path.replace("/api/v1/namespaces/", "/apis/apps/v1/namespaces/") + "/")}
        return 200, {"kind": "Status", "status": "Success"}


def serve(api):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def answer(self, code, doc):
            body = doc.encode() if isinstance(doc, str) else json.dumps(doc).encode()
            self.send_response(code)
            self.send_header("Content-Type", "text/plain" if isinstance(doc, str) else "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            u = urlsplit(self.path)
            self.answer(*api.get(u.path, parse_qs(u.query)))

        def do_POST(self):
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":  # how kubectl sends a file
                body = b""
                while True:
                    size = int(self.rfile.readline().strip() or b"0", 16)
                    if size == 0:
                        self.rfile.readline()
                        break
                    body += self.rfile.read(size)
                    self.rfile.readline()
            else:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.answer(*api.post(urlsplit(self.path).path, body))

        def do_DELETE(self):
            self.answer(*api.delete(urlsplit(self.path).path))

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "clustermax"))
    ap.add_argument("--nodes", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--fanout", action="store_true", help="also time the DaemonSet fan-out over every node")
    args = ap.parse_args()
    binary = os.path.abspath(args.binary)
    tmp = tempfile.mkdtemp(prefix="cm-k8s-bench-")
    try:
        cluster = os.path.join(FIXTURE, "gpu-operator")
        grown, names = grow(cluster, args.nodes)
        env = dict(os.environ, HOME=tmp, KUBECACHEDIR=os.path.join(tmp, "cache"))
        env["CLUSTERMAX_NODE_NAME"] = "template"
        out = subprocess.run([binary, "collect", "--role=compute", "--target=k8s"], env=env, capture_output=True, text=True)
        template = unframe(out.stdout)
        del env["CLUSTERMAX_NODE_NAME"]
        api = Api(cluster, grown, template)
        server = serve(api)
        kubeconfig = os.path.join(tmp, "kubeconfig")
        with open(kubeconfig, "w") as f:
            f.write(f"apiVersion: v1\nkind: Config\nclusters:\n- name: b\n  cluster:\n    server: http://127.0.0.1:{server.server_address[1]}\n"
                    "contexts:\n- name: b\n  context:\n    cluster: b\n    user: b\ncurrent-context: b\nusers:\n- name: b\n  user: {}\n")
        env["KUBECONFIG"] = kubeconfig
        pods = len(grown["/api/v1/pods"]["items"])
        print(f"cluster: {len(names)} GPU nodes (+ the fixture's others), {pods} pods; {binary}")
        rows = []
        walls, rss = [], []
        for i in range(args.runs):
            w, r, cpu, code = measure([binary, "audit", "--k8s", "--yes", "--exit-zero", "--out", os.path.join(tmp, f"run{i}")], env)
            if code != 0:
                sys.exit(f"audit --k8s exited {code}")
            walls.append(w)
            rss.append(r)
        rows.append((f"audit --k8s, no image: cluster checks + node list, {args.runs} runs", statistics.median(walls), statistics.median(rss), None))
        if args.fanout:
            w, r, cpu, code = measure([binary, "audit", "--k8s", "--yes", "--exit-zero", "--k8s-image", "bench/clustermax:1",
                                       "--fleet-timeout", "900", "--out", os.path.join(tmp, "fanout")], env)
            if code != 0:
                sys.exit(f"audit --k8s --k8s-image exited {code}")
            report = json.load(open(os.path.join(tmp, "fanout", "report.json")))
            got = report["fleet"]["nodes_returned"]
            rows.append((f"audit --k8s --k8s-image: DaemonSet over {len(names)} nodes, {got} bundles judged", w, r, cpu))
            if api.created:
                sys.exit(f"objects left behind: {sorted(api.created)}")
        print(f"{'what':<78} {'wall s':>8} {'peak RSS MiB':>13} {'CPU s':>7}")
        for what, w, r, cpu in rows:
            print(f"{what:<78} {w:8.2f} {r:13.1f} {'' if cpu is None else f'{cpu:7.1f}'}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
