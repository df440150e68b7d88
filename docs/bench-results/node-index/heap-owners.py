#!/usr/bin/env python3
"""Attribute a Go heap profile's in-use bytes to owners by allocation stack.

Usage: go tool pprof -raw FILE.pprof | python3 heap-owners.py [-v] [-w]
(-v: the largest unclassified stacks; -w: watch-decoded objects by type).
An allocation is attributed to the first rule its stack matches, in order."""
import re, sys, collections
lines = sys.stdin.read().split('\n')
i = lines.index('Samples:') + 2
samples = []
while i < len(lines) and lines[i].strip() and not lines[i].startswith('Locations'):
    l = lines[i]
    m = re.match(r'\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+):\s*(.*)', l)
    if m:
        samples.append((int(m.group(4)), [int(x) for x in m.group(5).split()]))
    i += 1
loc = {}
j = lines.index('Locations') + 1
cur = None
while j < len(lines) and not lines[j].startswith('Mappings'):
    l = lines[j]
    m = re.match(r'\s*(\d+): 0x[0-9a-f]+ M=\d+ (\S+)', l)
    if m:
        cur = int(m.group(1)); loc[cur] = [m.group(2)]
    elif l.strip() and cur is not None:
        loc[cur].append(l.split()[0])
    j += 1
rules = [
    ("our Service index and views (serviceindex.go)", r'service\.\(\*Controller\)\.(indexService|view\b)|service\.newServiceIndex|serviceIndex'),
    ("EndpointSlice cache: slim copies (slimSlice, compactSlice)", r'service\.(slimSlice|compactSlice|compactEndpoint)'),
    ("informer store indexes (threadSafeMap, our slice indexes)", r'cache\.\(\*threadSafeMap\)|cache\.\(\*storeIndex\)|service\.init\.func|sliceIndexers'),
    ("informer notification buffers (processorListener)", r'processorListener|RingGrowing'),
    ("DeltaFIFO", r'DeltaFIFO'),
    ("informer objects decoded from the initial list", r'cache\.\(\*Reflector\)\.list|pager'),
    ("informer objects decoded from watch events", r'StreamWatcher\)\.receive|watchHandler'),
    ("workqueue", r'workqueue'),
    ("settings parsed (annotations.Parse)", r'annotations\.Parse'),
    ("syncs in flight: models, backends, requests", r'service/clb|service/nlb|service\.ComputeBackends|service\.\(\*Controller\)\.(sync|ensure|request|syncBackends)'),
    ("cloud SDK calls in flight", r'alibaba-cloud-sdk-go|internal/cloud'),
    ("events (recorder)", r'tools/record'),
    ("HTTP/TLS (apiserver client, serving)", r'net/http|crypto/tls|http2'),
    ("package init, flags, scheme registration", r'\.init\b|\.init\.|runtime\.doInit|AddKnownType|protoregistry|flag\.'),
]
own = collections.Counter(); other = collections.Counter()
for b, ids in samples:
    if b == 0: continue
    frames = [f for x in ids for f in loc.get(x, [])]
    stack = '\n'.join(frames)
    for name, rx in rules:
        if re.search(rx, stack):
            own[name] += b; break
    else:
        own['other'] += b
        other[' <- '.join(frames[:4])] += b
tot = sum(own.values())
for k, v in own.most_common():
    print(f"{v/2**20:8.2f} MB  {100*v/tot:5.1f}%  {k}")
print(f"{tot/2**20:8.2f} MB  total in use")
if '-v' in sys.argv:
    print('\nother:')
    for k, v in other.most_common(15):
        print(f"{v/2**20:8.2f} MB  {k}")
if '-w' in sys.argv:
    sub = collections.Counter()
    for b, ids in samples:
        frames = [f for x in ids for f in loc.get(x, [])]
        stack = '\n'.join(frames)
        if not re.search(r'StreamWatcher\)\.receive|watchHandler', stack): continue
        if re.search(r'service\.(slimSlice|compactSlice|compactEndpoint)|processorListener|RingGrowing|DeltaFIFO|threadSafeMap|storeIndex', stack): continue
        typ = 'other'
        for f in frames:
            m = re.search(r'k8s\.io/api/(\w+)/v1\.\(\*(\w+)\)\.Unmarshal', f)
            if m: typ = m.group(1)+'.'+m.group(2)
        # top-level object type: last Unmarshal frame toward the root
        sub[typ] += b
    print('\nwatch-decoded, by outermost type:')
    for k, v in sub.most_common(): print(f"{v/2**20:8.2f} MB  {k}")
