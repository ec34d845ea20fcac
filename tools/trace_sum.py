# trace_sum.py TRACE.json: per queue (tid) and operation, the seconds and the count of the
# spans of a Chrome/Perfetto trace (oocsolve --trace, bench_cuda TRACE), and each queue's busy time.
import json, sys, collections
d = json.load(open(sys.argv[1]))
ev = [e for e in d["traceEvents"] if e.get("ph") == "X"]
t0 = min(e["ts"] for e in ev); t1 = max(e["ts"] + e["dur"] for e in ev)
print("span %.3f s, %d events" % ((t1 - t0) / 1e6, len(ev)))
per = collections.defaultdict(float); cnt = collections.Counter(); busy = collections.defaultdict(list)
for e in ev:
    k = (e.get("tid"), e["name"]); per[k] += e["dur"] / 1e6; cnt[k] += 1; busy[e.get("tid")].append((e["ts"], e["ts"] + e["dur"]))
for k in sorted(per, key=lambda k: (str(k[0]), -per[k])):
    print("tid %s %-12s %8.3f s  x%d" % (k[0], k[1], per[k], cnt[k]))
for tid, iv in busy.items():
    iv.sort(); tot = 0; cur = None
    for a, b in iv:
        if cur is None or a > cur[1]:
            if cur: tot += cur[1] - cur[0]
            cur = [a, b]
        else: cur[1] = max(cur[1], b)
    if cur: tot += cur[1] - cur[0]
    print("tid %s busy %.3f s" % (tid, tot / 1e6))
