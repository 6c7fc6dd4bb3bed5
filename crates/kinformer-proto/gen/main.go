// Command proto-gen writes kinformer-proto's schema table and its test fixtures.
//
// It reads Kubernetes' own Go types by reflection (every kind client-go's scheme registers,
// plus apiextensions.k8s.io/v1): each struct field's `protobuf` tag (number, wire type,
// cardinality), its `json` tag (name, omitempty, inline) and its Go shape (pointer, slice, map,
// the types with their own JSON form such as metav1.Time or intstr.IntOrString). From that it
// writes a table (generated/v1_NN.rs): one entry per message, the fields in Go struct order
// (the order encoding/json writes them), and the kinds that map (group, version, kind) to a
// message. Its header names the k8s.io modules it was read from and carries an FNV-1a 64 hash
// of everything after the header, which a Rust unit test recomputes, so that a hand edit shows.
//
// With -fixtures it also writes a fixtures file (tests/fixtures/v1_NN.json): for every kind,
// objects filled by apimachinery's API fuzzer, each as Go's protobuf encoding (the k8s\0
// envelope) and as the JSON Go writes for the object decoded from those bytes. The Rust tests
// decode the one and must get the other.
//
// One run reads the k8s.io module versions go.mod pins; generate.sh runs it once per
// Kubernetes minor, each time in a copy of this module pinned to that minor's modules:
//
//	go run . -out ../generated/v1_35.rs -fixtures ../tests/fixtures/v1_35.json
package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"reflect"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/resource"
	genericfuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes/scheme"
)

// special Go types: their JSON form is not the plain struct's.
var special = map[reflect.Type]string{
	reflect.TypeOf(metav1.Time{}):                                  "Time",
	reflect.TypeOf(metav1.MicroTime{}):                             "MicroTime",
	reflect.TypeOf(metav1.Duration{}):                              "Duration",
	reflect.TypeOf(resource.Quantity{}):                            "Quantity",
	reflect.TypeOf(intstr.IntOrString{}):                           "IntOrString",
	reflect.TypeOf(runtime.RawExtension{}):                         "RawJson",
	reflect.TypeOf(metav1.FieldsV1{}):                              "RawJson",
	reflect.TypeOf(apiextensionsv1.JSON{}):                         "RawJson",
	reflect.TypeOf(apiextensionsv1.JSONSchemaPropsOrArray{}):       "SchemaOrArray",
	reflect.TypeOf(apiextensionsv1.JSONSchemaPropsOrBool{}):        "SchemaOrBool",
	reflect.TypeOf(apiextensionsv1.JSONSchemaPropsOrStringArray{}): "SchemaOrStringArray",
}

type field struct {
	num       int
	json      string
	kind      string // Rust Kind expression
	repeated  bool
	pointer   bool // nil-able in Go (pointer, slice, map): absent means nil, not zero
	omitempty bool
	inline    bool
}

type message struct {
	name   string
	fields []field
}

type gen struct {
	index    map[reflect.Type]int
	messages []*message
	pending  []reflect.Type
}

func (g *gen) msg(t reflect.Type) int {
	if i, ok := g.index[t]; ok {
		return i
	}
	i := len(g.messages)
	g.index[t] = i
	g.messages = append(g.messages, &message{name: shortName(t)})
	g.pending = append(g.pending, t)
	return i
}

func shortName(t reflect.Type) string {
	p := t.PkgPath()
	for _, prefix := range []string{"k8s.io/api/", "k8s.io/apimachinery/pkg/apis/", "k8s.io/apimachinery/pkg/", "k8s.io/apiextensions-apiserver/pkg/apis/"} {
		p = strings.TrimPrefix(p, prefix)
	}
	return p + "." + t.Name()
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "proto-gen: "+format+"\n", args...)
	os.Exit(1)
}

// kindOf is the Rust Kind of a Go type used as a single value (not a repeated field).
func (g *gen) kindOf(t reflect.Type, where string) string {
	if s, ok := special[t]; ok {
		switch s {
		case "SchemaOrArray", "SchemaOrBool", "SchemaOrStringArray":
			props := g.msg(reflect.TypeOf(apiextensionsv1.JSONSchemaProps{}))
			return fmt.Sprintf("K::%s(%d)", s, props)
		}
		return "K::" + s
	}
	switch t.Kind() {
	case reflect.String:
		return "K::Str"
	case reflect.Bool:
		return "K::Bool"
	case reflect.Int32:
		return "K::I32"
	case reflect.Int64, reflect.Int:
		return "K::I64"
	case reflect.Uint32:
		return "K::U32"
	case reflect.Uint64:
		return "K::U64"
	case reflect.Float64:
		return "K::F64"
	case reflect.Struct:
		return fmt.Sprintf("K::Msg(%d)", g.msg(t))
	case reflect.Ptr:
		return g.kindOf(t.Elem(), where)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "K::Bytes"
		}
		// a named slice as one value is a wrapper message { repeated items = 1 }
		if t.Name() == "" {
			fail("%s: unnamed slice used as a single value", where)
		}
		return fmt.Sprintf("K::Wrapper(&%s)", g.kindOf(t.Elem(), where))
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			fail("%s: map key %s", where, t.Key())
		}
		return fmt.Sprintf("K::Map(&%s)", g.kindOf(t.Elem(), where))
	}
	fail("%s: unsupported Go type %s", where, t)
	return ""
}

func (g *gen) fill(t reflect.Type) {
	m := g.messages[g.index[t]]
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		where := t.String() + "." + sf.Name
		ptag := sf.Tag.Get("protobuf")
		if ptag == "" || ptag == "-" {
			continue // TypeMeta in objects: carried by the envelope
		}
		parts := strings.Split(ptag, ",")
		if len(parts) < 3 {
			fail("%s: protobuf tag %q", where, ptag)
		}
		num, err := strconv.Atoi(parts[1])
		if err != nil {
			fail("%s: protobuf tag %q", where, ptag)
		}
		jtag := sf.Tag.Get("json")
		jparts := strings.Split(jtag, ",")
		f := field{num: num, json: jparts[0]}
		for _, o := range jparts[1:] {
			switch o {
			case "omitempty":
				f.omitempty = true
			case "inline":
				f.inline = true
			}
		}
		if jparts[0] == "-" {
			continue
		}
		if sf.Anonymous && jparts[0] == "" {
			f.inline = true
		}
		if f.json == "" && !f.inline {
			f.json = sf.Name
		}
		ft := sf.Type
		switch ft.Kind() {
		case reflect.Ptr, reflect.Map:
			f.pointer = true
		case reflect.Slice:
			f.pointer = true
		}
		if ft.Kind() == reflect.Slice && ft.Elem().Kind() != reflect.Uint8 && !isWrapper(t, i) {
			f.repeated = true
			et := ft.Elem()
			if et.Kind() == reflect.Slice && et.Elem().Kind() != reflect.Uint8 && et.Name() == "" {
				fail("%s: slice of slices", where)
			}
			f.kind = g.kindOf(et, where)
		} else {
			f.kind = g.kindOf(ft, where)
		}
		m.fields = append(m.fields, f)
	}
}

// isWrapper says whether field i of struct t, a slice, is encoded as go-to-protobuf's wrapper
// message for named slices ({ repeated items = 1 }) rather than as a repeated field: it asks the
// type's own generated Marshal with a one-element slice.
func isWrapper(t reflect.Type, i int) bool {
	ft := t.Field(i).Type
	if ft.Name() == "" {
		return false
	}
	v := reflect.New(t)
	// two elements: a repeated field occurs twice, a wrapper once (holding both)
	s := reflect.MakeSlice(ft, 2, 2)
	if ft.Elem().Kind() == reflect.String {
		s.Index(0).SetString("x")
		s.Index(1).SetString("y")
	}
	v.Elem().Field(i).Set(s)
	m, ok := v.Interface().(interface{ Marshal() ([]byte, error) })
	if !ok {
		fail("%s has no generated Marshal", t)
	}
	b, err := m.Marshal()
	if err != nil {
		fail("%s: marshal: %v", t, err)
	}
	// count the field's own occurrences (non-pointer fields are written too)
	num := protoNum(t.Field(i))
	seen := 0
	for len(b) > 0 {
		key, n := uvarint(b)
		b = b[n:]
		switch key & 7 {
		case 0:
			_, n = uvarint(b)
			b = b[n:]
		case 1:
			b = b[8:]
		case 5:
			b = b[4:]
		case 2:
			l, n := uvarint(b)
			payload := b[n : n+int(l)]
			b = b[n+int(l):]
			_ = payload
			if int(key>>3) == num {
				seen++
			}
		default:
			fail("%s: wire type %d", t, key&7)
		}
	}
	if seen == 0 {
		fail("%s: field %d not written", t, num)
	}
	return seen == 1
}

func uvarint(b []byte) (uint64, int) {
	var x uint64
	for i, c := range b {
		x |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return x, i + 1
		}
	}
	fail("bad varint")
	return 0, 0
}

func protoNum(sf reflect.StructField) int {
	parts := strings.Split(sf.Tag.Get("protobuf"), ",")
	n, err := strconv.Atoi(parts[1])
	if err != nil {
		fail("%s: protobuf tag", sf.Name)
	}
	return n
}

type kindEntry struct {
	group, version, kind string
	msg                  int
}

func buildScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := scheme.AddToScheme(s); err != nil {
		fail("scheme: %v", err)
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		fail("scheme: %v", err)
	}
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	// meta.k8s.io/v1: PartialObjectMetadata(List) and Table, what metadata-only clients get
	if err := metav1.AddMetaToScheme(s); err != nil {
		fail("scheme: %v", err)
	}
	return s
}

func main() {
	out := flag.String("out", "", "the Rust table to write")
	fixtures := flag.String("fixtures", "", "the fixtures file to write")
	perKind := flag.Int("per-kind", 2, "fuzzed objects per kind in the fixtures")
	flag.Parse()
	if *out == "" {
		fail("-out is required")
	}
	s := buildScheme()
	g := &gen{index: map[reflect.Type]int{}}
	var kinds []kindEntry
	gvks := s.AllKnownTypes()
	keys := make([]schema.GroupVersionKind, 0, len(gvks))
	for gvk := range gvks {
		if gvk.Version == runtime.APIVersionInternal {
			continue
		}
		keys = append(keys, gvk)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	// the meta types every group registers (WatchEvent, options, Status): keep one entry each,
	// under the core group, plus meta.k8s.io's PartialObjectMetadata(List) and Table
	seen := map[string]bool{}
	for _, gvk := range keys {
		t := gvks[gvk]
		if t.PkgPath() == reflect.TypeOf(metav1.Status{}).PkgPath() {
			if gvk.Group != "" && gvk.Group != "meta.k8s.io" {
				continue
			}
			if seen[gvk.Kind+"/"+gvk.Group] {
				continue
			}
			seen[gvk.Kind+"/"+gvk.Group] = true
		}
		if _, ok := t.FieldByName("TypeMeta"); !ok && t.Kind() == reflect.Struct {
			// types without TypeMeta (e.g. ListOptions-like internal helpers) still encode
		}
		kinds = append(kinds, kindEntry{gvk.Group, gvk.Version, gvk.Kind, g.msg(t)})
	}
	for len(g.pending) > 0 {
		t := g.pending[0]
		g.pending = g.pending[1:]
		if t.Kind() != reflect.Struct {
			fail("%s is not a struct", t)
		}
		g.fill(t)
	}
	writeTable(*out, g, kinds)
	if *fixtures != "" {
		writeFixtures(*fixtures, s, keys, *perKind)
	}
}

func rustStr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func writeTable(path string, g *gen, kinds []kindEntry) {
	var b bytes.Buffer
	b.WriteString("use crate::schema::{Field, Kind as K, KindEntry, Message};\n\n")
	b.WriteString("const R: u8 = Field::REPEATED;\nconst P: u8 = Field::POINTER;\nconst O: u8 = Field::OMITEMPTY;\nconst I: u8 = Field::INLINE;\n\n")
	fmt.Fprintf(&b, "/// Every message, by index.\npub(crate) static MESSAGES: [Message; %d] = [\n", len(g.messages))
	for i, m := range g.messages {
		fmt.Fprintf(&b, "    // %d\n    Message {\n        name: %s,\n        fields: &[\n", i, rustStr(m.name))
		for _, f := range m.fields {
			var flags []string
			if f.repeated {
				flags = append(flags, "R")
			}
			if f.pointer {
				flags = append(flags, "P")
			}
			if f.omitempty {
				flags = append(flags, "O")
			}
			if f.inline {
				flags = append(flags, "I")
			}
			fl := "0"
			if len(flags) > 0 {
				fl = strings.Join(flags, " | ")
			}
			fmt.Fprintf(&b, "            Field::new(%d, %s, %s, %s),\n", f.num, rustStr(f.json), f.kind, fl)
		}
		b.WriteString("        ],\n    },\n")
	}
	b.WriteString("];\n\n")
	fmt.Fprintf(&b, "/// Every registered kind, sorted by (group, version, kind).\npub(crate) static KINDS: [KindEntry; %d] = [\n", len(kinds))
	sort.Slice(kinds, func(i, j int) bool {
		a, c := kinds[i], kinds[j]
		if a.group != c.group {
			return a.group < c.group
		}
		if a.version != c.version {
			return a.version < c.version
		}
		return a.kind < c.kind
	})
	for _, k := range kinds {
		fmt.Fprintf(&b, "    KindEntry::new(%s, %s, %s, %d),\n", rustStr(k.group), rustStr(k.version), rustStr(k.kind), k.msg)
	}
	b.WriteString("];\n")
	mods, minor := moduleVersions()
	var h bytes.Buffer
	fmt.Fprintf(&h, "// @generated by crates/kinformer-proto/gen (generate.sh) for Kubernetes %s from\n", minor)
	fmt.Fprintf(&h, "// %s. Do not edit.\n", mods)
	fmt.Fprintf(&h, "// fnv1a64 of what follows this header: %016x\n\n", fnv1a64(b.Bytes()))
	h.Write(b.Bytes())
	if err := os.WriteFile(path, h.Bytes(), 0o644); err != nil {
		fail("write %s: %v", path, err)
	}
}

// fnv1a64 is the 64-bit FNV-1a hash, which the Rust test recomputes over the table's body.
func fnv1a64(data []byte) uint64 {
	h := uint64(0xcbf29ce484222325)
	for _, c := range data {
		h ^= uint64(c)
		h *= 0x100000001b3
	}
	return h
}

// moduleVersions names the k8s.io modules this program was built with ("k8s.io/api v0.35.4,
// ..."), and the Kubernetes minor they belong to ("1.35"); it fails unless they all belong
// to the same one.
func moduleVersions() (string, string) {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		fail("no build info: run with go run or go build")
	}
	want := []string{"k8s.io/api", "k8s.io/apimachinery", "k8s.io/apiextensions-apiserver", "k8s.io/client-go"}
	found := map[string]string{}
	for _, d := range info.Deps {
		v := d.Version
		if d.Replace != nil {
			v = d.Replace.Version
		}
		found[d.Path] = v
	}
	var parts []string
	minor, same := "", true
	for _, p := range want {
		v, ok := found[p]
		if !ok {
			fail("%s is not a dependency", p)
		}
		// v0.35.4 is Kubernetes 1.35
		f := strings.SplitN(strings.TrimPrefix(v, "v"), ".", 3)
		if len(f) < 2 || f[0] != "0" {
			fail("%s %s: not a v0.N.x version", p, v)
		}
		m := "1." + f[1]
		if minor != "" && m != minor {
			fail("%s %s is not of Kubernetes %s", p, v, minor)
		}
		minor = m
		same = same && v == found[want[0]]
		parts = append(parts, p+" "+v)
	}
	if same {
		return strings.Join(want[:len(want)-1], ", ") + " and " + want[len(want)-1] + " " + found[want[0]], minor
	}
	return strings.Join(parts, ", "), minor
}

type fixture struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Proto      string `json:"proto"`
	JSON       string `json:"json"`
}

func writeFixtures(path string, s *runtime.Scheme, keys []schema.GroupVersionKind, perKind int) {
	codecs := serializer.NewCodecFactory(s)
	f := fuzzer.FuzzerFor(genericfuzzer.Funcs, rand.NewSource(20261124), codecs)
	pb := protobuf.NewSerializer(s, s)
	var out []fixture
	for _, gvk := range keys {
		t := s.AllKnownTypes()[gvk]
		if t.PkgPath() == reflect.TypeOf(metav1.Status{}).PkgPath() && gvk.Group != "" || gvk.Kind == "WatchEvent" {
			// WatchEvent travels inside watch frames, never as an object of its own
			continue
		}
		for n := 0; n < perKind; n++ {
			obj, err := s.New(gvk)
			if err != nil {
				fail("new %s: %v", gvk, err)
			}
			f.Fill(obj)
			obj.GetObjectKind().SetGroupVersionKind(gvk)
			var buf bytes.Buffer
			if err := pb.Encode(obj, &buf); err != nil {
				// types that are not protobuf messages (a few meta options) are left out
				continue
			}
			back, err := s.New(gvk)
			if err != nil {
				fail("new %s: %v", gvk, err)
			}
			if _, _, err := pb.Decode(buf.Bytes(), nil, back); err != nil {
				fail("decode %s: %v", gvk, err)
			}
			back.GetObjectKind().SetGroupVersionKind(gvk)
			js, err := json.Marshal(back)
			if err != nil {
				// fuzzed raw fields that are not JSON cannot be written as JSON by Go either
				continue
			}
			out = append(out, fixture{gvk.GroupVersion().String(), gvk.Kind, base64.StdEncoding.EncodeToString(buf.Bytes()), string(js)})
		}
	}
	data, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		fail("fixtures: %v", err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		fail("write %s: %v", path, err)
	}
	fmt.Fprintf(os.Stderr, "proto-gen: %d fixtures\n", len(out))
}
