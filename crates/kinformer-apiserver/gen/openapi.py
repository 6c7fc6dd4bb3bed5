#!/usr/bin/env python3
"""Regenerates the built-in OpenAPI schemas (openapi/v1_NN.json), one file per Kubernetes
minor that k8s-openapi supports, from the k8s.io/kubernetes Go module's published spec
(api/openapi-spec/v3/*.json), fetched with `go mod download` (the Go module proxy).

What is kept: the OpenAPI v3 `components.schemas` of every group-version document, merged
(a definition is the same in every document that has it), reduced to the definitions of
stable API versions' kinds (`x-kubernetes-group-version-kind` with a version `vN`, as the
server serves them) and everything they reference. The v2 definitions are derived from these
at run time (src/schemas.rs, `to_v2`), exactly: this script checks the derivation against the
module's api/openapi-spec/swagger.json before writing.

One definition per line, so that diffs between minors and regenerations read well.

    gen/openapi.py            # every minor
    gen/openapi.py 1.36       # only the ones named

Bump a minor's patch release here; add a minor here and in src/schemas.rs (data!) when
k8s-openapi adds one. The proxy does not serve every patch release of k8s.io/kubernetes: a
minor whose wanted release is refused falls back to the newest one that is served (NOTE).
"""
import glob
import json
import os
import re
import subprocess
import sys

# Kubernetes minor, k8s.io/kubernetes version, a note on the choice
VERSIONS = [
    ("1.33", "v1.33.13", ""),
    ("1.34", "v1.34.4", "v1.34.13 (k8s.io/api's) is not served by the Go module proxy; v1.34.4 is"),
    ("1.35", "v1.35.4", ""),
    ("1.36", "v1.36.3", "v1.36.6 (k8s.io/api's) is not served by the Go module proxy; v1.36.3 is"),
    ("1.37", "v1.37.2", ""),
]

CRATE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STABLE = re.compile(r"v\d+")


def module_dir(version):
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"k8s.io/kubernetes@{version}"],
        check=True, capture_output=True, text=True, cwd=os.path.join(CRATE, "gen"),
    ).stdout
    return json.loads(out)["Dir"]


def refs(schema, out):
    """Names of the definitions `schema` references."""
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str):
            out.add(ref.rsplit("/", 1)[-1])
        for k, v in schema.items():
            if k != "$ref":
                refs(v, out)
    elif isinstance(schema, list):
        for v in schema:
            refs(v, out)


def to_v2(s):
    """The OpenAPI v2 form of a v3 schema, as kube-openapi writes both (mirrors src/schemas.rs)."""
    s = dict(s)
    all_of = s.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and "$ref" in all_of[0]:
        s["$ref"] = s.pop("allOf")[0]["$ref"]
    s.pop("default", None)
    if "oneOf" in s:
        s.pop("oneOf")
        s["type"] = "string"
    if "$ref" in s:
        s["$ref"] = s["$ref"].replace("#/components/schemas/", "#/definitions/")
    if "properties" in s:
        s["properties"] = {k: to_v2(v) for k, v in s["properties"].items()}
    if isinstance(s.get("items"), dict):
        s["items"] = to_v2(s["items"])
    if isinstance(s.get("additionalProperties"), dict):
        s["additionalProperties"] = to_v2(s["additionalProperties"])
    for k in ("allOf", "anyOf"):
        if k in s:
            s[k] = [to_v2(x) for x in s[k]]
    return s


def generate(minor, version, note):
    spec = os.path.join(module_dir(version), "api", "openapi-spec")
    with open(os.path.join(spec, "swagger.json")) as fh:
        v2 = json.load(fh)["definitions"]
    gvk = "x-kubernetes-group-version-kind"
    schemas = {}
    for f in sorted(glob.glob(os.path.join(spec, "v3", "*.json"))):
        with open(f) as fh:
            doc = json.load(fh)
        for name, s in doc.get("components", {}).get("schemas", {}).items():
            if name in schemas and schemas[name] != s:
                # Since 1.36 the shared kinds (DeleteOptions, WatchEvent) list only the
                # document's own group-version: keep swagger.json's full list.
                a, b = dict(schemas[name]), dict(s)
                a.pop(gvk, None)
                b.pop(gvk, None)
                if a != b or name not in v2:
                    sys.exit(f"{version}: {name} differs between documents")
                s = dict(s)
                s[gvk] = v2[name][gvk]
            schemas[name] = s
    roots = [
        n for n, s in schemas.items()
        if any(STABLE.fullmatch(g["version"]) for g in s.get("x-kubernetes-group-version-kind", []))
    ]
    keep, stack = set(), list(roots)
    while stack:
        n = stack.pop()
        if n in keep:
            continue
        keep.add(n)
        found = set()
        refs(schemas[n], found)
        stack.extend(found)
    for n in keep:
        if to_v2(schemas[n]) != v2.get(n):
            sys.exit(f"{version}: the v2 form of {n} is not swagger.json's")
    name = "v1_" + minor.split(".")[1]
    path = os.path.join(CRATE, "openapi", f"{name}.json")
    with open(path, "w") as out:
        header = {
            "generatedBy": "crates/kinformer-apiserver/gen/openapi.py",
            "kubernetes": minor,
            "source": f"k8s.io/kubernetes@{version} api/openapi-spec/v3",
        }
        if note:
            header["note"] = note
        for k, v in header.items():
            out.write("{" if k == "generatedBy" else ",")
            out.write(json.dumps(k) + ":" + json.dumps(v) + "\n")
        out.write(',"schemas":{\n')
        for i, n in enumerate(sorted(keep)):
            sep = "," if i else ""
            out.write(sep + json.dumps(n) + ":" + json.dumps(schemas[n], sort_keys=True, separators=(",", ":")) + "\n")
        out.write("}}\n")
    print(f"openapi-gen: Kubernetes {minor} (k8s.io/kubernetes {version}): {len(keep)} definitions -> {path}", file=sys.stderr)


def main():
    wanted = sys.argv[1:]
    for minor, version, note in VERSIONS:
        if wanted and minor not in wanted:
            continue
        generate(minor, version, note)


if __name__ == "__main__":
    main()
