#!/usr/bin/env python3
"""Regenerates the built-in OpenAPI schemas (openapi/v1_NN.json), one file per Kubernetes
minor that k8s-openapi supports, from the k8s.io/kubernetes Go module's published spec
(api/openapi-spec/v3/*.json), fetched with `go mod download` (the Go module proxy).

What is kept: the OpenAPI v3 `components.schemas` of every group-version document, merged
(a definition is the same in every document that has it), reduced to the definitions of
stable API versions' kinds (`x-kubernetes-group-version-kind` with a version `vN`, as the
server serves them) and everything they reference. The published spec leaves out the
`enum`s of enumerated fields and their "Possible enum values" descriptions, which a running
kube-apiserver serves (OpenAPIEnums): they are added back from the module's generated
definitions (pkg/generated/openapi/zz_generated.openapi.go), so the result is what
kube-apiserver serves (checked for 1.35 against the e2e harness's kube-apiserver: identical
definitions). The v2 definitions are derived from these
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


def module_dir(version, module="k8s.io/kubernetes"):
    out = subprocess.run(
        ["go", "mod", "download", "-json", f"{module}@{version}"],
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


GO_PROP = re.compile(r'^(\t+)"([^"]+)": \{$')
GO_ITEMS = re.compile(r'^(\t+)Items: &spec\.SchemaOrArray\{$')
GO_ADDITIONAL = re.compile(r'^(\t+)AdditionalProperties: &spec\.SchemaOrBool\{$')
GO_DESCRIPTION = re.compile(r'^(\t+)Description: +(".*"),$')
GO_ENUM = re.compile(r'^(\t+)Enum: +\[\]interface\{\}\{(.*)\},$')
GO_FUNC = re.compile(r'^func schema_(\w+)\(')


def go_enums(path):
    """(function name, property path) -> {"enum": [...], "description": "..."} for every
    enumerated field of the generated definitions (gofmt'd Go, read line by line)."""
    out = {}
    func, stack = None, []
    with open(path) as fh:
        for line in fh:
            line = line.rstrip("\n")
            m = GO_FUNC.match(line)
            if m:
                func, stack = m.group(1), []
                continue
            if func is None or not line.strip():
                continue
            indent = len(line) - len(line.lstrip("\t"))
            while stack and indent <= stack[-1][0]:
                stack.pop()
            m = GO_PROP.match(line)
            if m:
                stack.append((indent, m.group(2)))
                continue
            m = GO_ITEMS.match(line) or GO_ADDITIONAL.match(line)
            if m:
                stack.append((indent, "[items]" if "Items" in line else "[additionalProperties]"))
                continue
            key = (func, tuple(k for _, k in stack))
            m = GO_DESCRIPTION.match(line)
            if m and "Possible enum values" in m.group(2):
                try:
                    out.setdefault(key, {})["description"] = json.loads(m.group(2))
                except ValueError:
                    pass
                continue
            m = GO_ENUM.match(line)
            if m:
                try:
                    out.setdefault(key, {})["enum"] = json.loads("[" + m.group(2) + "]")
                except ValueError:
                    pass
    return out


def go_func_name(definition):
    """The generated function's name of a definition (`io.k8s.api.core.v1.Pod` ->
    `k8sio_api_core_v1_Pod`)."""
    name = definition
    if name.startswith("io.k8s."):
        name = "k8sio." + name[len("io.k8s."):]
    return re.sub(r"[.\-/]", "_", name)


def add_enums(schemas, generated):
    """Adds the generated definitions' enums and enum descriptions to `schemas`."""
    by_func = {go_func_name(n): n for n in schemas}
    added = 0
    for (func, path), fields in generated.items():
        name = by_func.get(func)
        if name is None:
            # a module's own packages are named from the module root (`pkg_apis_...`)
            found = [n for f, n in by_func.items() if f.endswith("_" + func)]
            if len(found) != 1:
                continue
            name = found[0]
        node = schemas[name]
        for step in path:
            if step == "[items]":
                node = node.get("items")
            elif step == "[additionalProperties]":
                node = node.get("additionalProperties")
            else:
                node = node.get("properties", {}).get(step)
            if not isinstance(node, dict):
                break
        else:
            node.update(fields)
            added += 1
    return added


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
    # checked before the enums are added: swagger.json has none
    for n, d in schemas.items():
        if n in v2 and to_v2(d) != v2[n]:
            sys.exit(f"{version}: the v2 form of {n} is not swagger.json's")
    generated = go_enums(os.path.join(module_dir(version), "pkg", "generated", "openapi", "zz_generated.openapi.go"))
    # CustomResourceDefinition's types are generated in their own module (same release, v0.N.P)
    extensions = module_dir("v0." + version[len("v1."):], "k8s.io/apiextensions-apiserver")
    generated.update(go_enums(os.path.join(extensions, "pkg", "generated", "openapi", "zz_generated.openapi.go")))
    enums = add_enums(schemas, generated)
    roots = [
        n for n, s in schemas.items()
        if any(STABLE.fullmatch(g["version"]) for g in s.get("x-kubernetes-group-version-kind", []))
    ]
    # answered by PATCH operations, referenced by no kind
    roots.append("io.k8s.apimachinery.pkg.apis.meta.v1.Patch")
    keep, stack = set(), list(roots)
    while stack:
        n = stack.pop()
        if n in keep:
            continue
        keep.add(n)
        found = set()
        refs(schemas[n], found)
        stack.extend(found)
    name = "v1_" + minor.split(".")[1]
    path = os.path.join(CRATE, "openapi", f"{name}.json")
    with open(path, "w") as out:
        header = {
            "generatedBy": "crates/kinformer-apiserver/gen/openapi.py",
            "kubernetes": minor,
            "source": f"k8s.io/kubernetes@{version} api/openapi-spec/v3 and pkg/generated/openapi (enums), k8s.io/apiextensions-apiserver@v0.{version[len('v1.'):]} pkg/generated/openapi (enums)",
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
    print(f"openapi-gen: Kubernetes {minor} (k8s.io/kubernetes {version}): {len(keep)} definitions ({enums} enumerated fields) -> {path}", file=sys.stderr)


def main():
    wanted = sys.argv[1:]
    for minor, version, note in VERSIONS:
        if wanted and minor not in wanted:
            continue
        generate(minor, version, note)


if __name__ == "__main__":
    main()
