#!/usr/bin/env python3
"""Reads what the OpenTelemetry Collector's file exporter wrote (OTLP JSON,
one ExportProfilesServiceRequest a line) and prints it as the tests want it.

  otlp_fold.py --summary FILE...        a JSON object per service: its
      resource attributes, profiles (count, sample and period types, start
      times in seconds) and the sum of its sample values (CPU profiles)
  otlp_fold.py --folded SERVICE FILE... that service's CPU samples folded,
      root first: "root;...;leaf VALUE", inline frames innermost last
  otlp_fold.py --types SERVICE FILE...  that service's CPU samples by frame:
      "TYPE<tab>FUNCTION<tab>VALUE", TYPE the location's profile.frame.type

Every index is checked against its table and every table's entry 0 must be
the zero value (the schema's rule): a violation exits 1 saying which.
"""
import json
import sys
from collections import defaultdict


def fail(msg):
    print("otlp_fold: " + msg, file=sys.stderr)
    sys.exit(1)


def at(table, i, what):
    i = int(i or 0)
    if not 0 <= i < len(table):
        fail("%s index %d out of range (table of %d)" % (what, i, len(table)))
    return table[i]


def any_value(v, strings):
    if "stringValueStrindex" in v:
        return at(strings, v["stringValueStrindex"], "string")
    for k in ("stringValue", "intValue", "boolValue", "doubleValue"):
        if k in v:
            return v[k]
    return None


def key_of(kv, strings):
    return kv["key"] if "key" in kv else at(strings, kv.get("keyStrindex", 0), "string")


def frame_type(loc, attrs, strings):
    """A location's profile.frame.type ("" when it has none)."""
    for a in loc.get("attributeIndices", []):
        kv = at(attrs, a, "attribute")
        if key_of(kv, strings) == "profile.frame.type":
            return any_value(kv.get("value", {}), strings)
    return ""


def requests(files):
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip().strip("\0")
                if line:
                    yield json.loads(line)


def main():
    mode, files = sys.argv[1], sys.argv[2:]
    want = None
    if mode in ("--folded", "--types"):
        want, files = files[0], files[1:]
    summary = defaultdict(lambda: {"attributes": {}, "profiles": 0, "types": [], "total": 0, "starts": []})
    folded = defaultdict(int)
    typed = defaultdict(int)
    for req in requests(files):
        d = req.get("dictionary", {})
        strings = d.get("stringTable", [])
        tables = {k: d.get(k, []) for k in ("mappingTable", "locationTable", "functionTable",
                                            "attributeTable", "stackTable")}
        if not strings or strings[0] != "":
            fail("string_table[0] is not the empty string")
        for name, t in tables.items():
            if not t or any(v for k, v in t[0].items() if k != "value") or t[0].get("value"):
                fail("%s[0] is not the zero value: %s" % (name, t[:1]))
        attrs = tables["attributeTable"]
        for rp in req.get("resourceProfiles", []):
            ra = {key_of(kv, strings): any_value(kv.get("value", {}), strings)
                  for kv in rp.get("resource", {}).get("attributes", [])}
            service = ra.get("service.name")
            s = summary[service]
            s["attributes"] = ra
            for sp in rp.get("scopeProfiles", []):
                for p in sp.get("profiles", []):
                    st, pt = p.get("sampleType", {}), p.get("periodType", {})
                    kind = "%s/%s" % (at(strings, st.get("typeStrindex"), "string"),
                                      at(strings, st.get("unitStrindex"), "string"))
                    s["profiles"] += 1
                    s["starts"].append(int(p.get("timeUnixNano", 0)) / 1e9)
                    if kind not in s["types"]:
                        s["types"].append(kind)
                    s["period_type"] = "%s/%s" % (at(strings, pt.get("typeStrindex"), "string"),
                                                  at(strings, pt.get("unitStrindex"), "string"))
                    s["period"] = int(p.get("period", 0))
                    cpu = kind == "samples/count"
                    for smp in p.get("samples", []):
                        value = sum(int(v) for v in smp.get("values", []))
                        for a in smp.get("attributeIndices", []):
                            at(attrs, a, "attribute")
                        if cpu:
                            s["total"] += value
                        if not cpu or service != want:
                            continue
                        stack = at(tables["stackTable"], smp.get("stackIndex"), "stack")
                        names = []  # leaf first
                        for li in stack.get("locationIndices", []):
                            loc = at(tables["locationTable"], li, "location")
                            at(tables["mappingTable"], loc.get("mappingIndex"), "mapping")
                            ftype = frame_type(loc, attrs, strings)
                            for line in loc.get("lines", []):
                                fn = at(tables["functionTable"], line.get("functionIndex"), "function")
                                names.append(at(strings, fn.get("nameStrindex"), "string"))
                                typed["%s\t%s" % (ftype, names[-1])] += value
                        folded[";".join(reversed(names))] += value
    if mode == "--summary":
        print(json.dumps(summary, sort_keys=True))
    elif mode == "--types":
        for key, value in sorted(typed.items()):
            print("%s\t%d" % (key, value))
    else:
        for stack, value in sorted(folded.items()):
            print("%s %d" % (stack, value))


if __name__ == "__main__":
    main()
