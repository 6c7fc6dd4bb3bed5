#!/usr/bin/env python3
"""The workspace's structure rules, checked by scripts/test.sh:

- no file under a crate's src/ is longer than 600 lines (one concept per file; a file past
  that is asking to be split along a seam; generated tables live outside src/);
- no import cycle between a crate's top-level modules, nor between the files of one folder
  (`crate::`, `super::` and `self::` paths, outside `#[cfg(test)] mod tests`).

Prints what breaks a rule and exits 1, or prints a summary and exits 0.
"""
import os, re, sys
def modpath(root, f):
    rel=os.path.relpath(f, root)[:-3].split(os.sep)
    if rel[-1] in ('mod','lib','main'): rel=rel[:-1]
    return rel
def analyze(crate_src):
    files=[os.path.join(d,f) for d,_,fs in os.walk(crate_src) for f in fs if f.endswith('.rs')]
    mods={tuple(modpath(crate_src,f)):f for f in files}
    edges=set()
    for m,f in mods.items():
        src=open(f).read()
        # strip tests modules crudely: ignore lines after #[cfg(test)] mod tests {
        src=re.split(r'#\[cfg\(test\)\]\s*mod tests\s*\{', src)[0]
        # remove comments
        src=re.sub(r'//.*','',src)
        for path in re.findall(r'\b((?:crate|super|self)(?:::\w+)+)', src):
            parts=path.split('::')
            base=list(m)
            # file module m; 'super' relative to m's parent
            if parts[0]=='crate': tgt=parts[1:]
            elif parts[0]=='self': tgt=list(m)+parts[1:]
            else:
                b=list(m)
                while parts and parts[0]=='super':
                    b=b[:-1]; parts=parts[1:]
                tgt=b+parts
            # resolve to longest existing module prefix
            best=None
            for i in range(len(tgt),0,-1):
                if tuple(tgt[:i]) in mods: best=tuple(tgt[:i]); break
            if best and best!=m and not (best==tuple(m[:len(best)])):  # ignore referencing own ancestors
                edges.add((m,best))
    return mods, edges
def cycles(nodes, edges):
    g={n:set() for n in nodes}
    for a,b in edges: g[a].add(b)
    # tarjan
    index={}; low={}; st=[]; on=set(); out=[]; i=[0]
    sys.setrecursionlimit(10000)
    def sc(v):
        index[v]=low[v]=i[0]; i[0]+=1; st.append(v); on.add(v)
        for w in g[v]:
            if w not in index: sc(w); low[v]=min(low[v],low[w])
            elif w in on: low[v]=min(low[v],index[w])
        if low[v]==index[v]:
            comp=[]
            while True:
                w=st.pop(); on.discard(w); comp.append(w)
                if w==v: break
            if len(comp)>1: out.append(comp)
    for v in g:
        if v not in index: sc(v)
    return out
MAX_LINES = 600


def main():
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
    crates = sorted(os.path.join(root, 'crates', c, 'src') for c in os.listdir(os.path.join(root, 'crates')))
    problems = []
    files = 0
    for crate in crates:
        if not os.path.isdir(crate):
            continue
        for d, _, fs in os.walk(crate):
            for f in fs:
                if f.endswith('.rs'):
                    files += 1
                    path = os.path.join(d, f)
                    n = sum(1 for _ in open(path))
                    if n > MAX_LINES:
                        problems.append(f'{os.path.relpath(path, root)}: {n} lines (at most {MAX_LINES})')
        mods, edges = analyze(crate)
        top = set(m[:1] for m in mods if m)
        top_edges = set((a[:1], b[:1]) for a, b in edges if a and b and a[:1] != b[:1])
        sibling_edges = set((a, b) for a, b in edges if a[:-1] == b[:-1])
        name = os.path.relpath(crate, root)
        for c in cycles(top, top_edges) + cycles(set(mods), sibling_edges):
            problems.append(f'{name}: import cycle ' + ' <-> '.join('::'.join(x) for x in sorted(c)))
    if problems:
        print('\n'.join(problems))
        sys.exit(1)
    print(f'structure: {files} source files, none over {MAX_LINES} lines, no import cycle')


if __name__ == '__main__':
    main()
