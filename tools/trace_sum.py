# trace_sum.py TRACE.json [TID]: per queue (tid) and operation, the seconds and the count of the
# spans of a Chrome/Perfetto trace (oocsolve --trace, bench_cuda TRACE, LU_TRACE), and each
# queue's busy time. Then, where the trace has a host row (tid 0, exec.h ex_host_span): the
# gaps of queue TID (default 1, the compute stream) longer than 0.5 ms between its first and
# last operation (from LU's "lu setup" on, where the trace has it), and which host spans overlapped them (the host work that kept that queue
# waiting; LU's phases, which contain everything, left out).
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

q = int(sys.argv[2]) if len(sys.argv) > 2 else 1
host = [(e["ts"], e["ts"] + e["dur"], e["name"]) for e in ev if e.get("tid") == 0]
# from the method's start where the trace marks it (LU's "lu setup"): what came before (a
# warm-up, the bench's fill) is not the method's waiting
start = min([a for a, b, n in host if n == "lu setup"], default=t0)
dev = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev if e.get("tid") == q and e["ts"] >= start)
if dev and host:
    gaps, end = [], dev[0][1]
    for a, b in dev[1:]:
        if a > end + 500: gaps.append((end, a))
        end = max(end, b)
    print("tid %d: first op at %.3f s, last end %.3f s (from the trace's start); %d gaps > 0.5 ms, "
          "%.3f s in all" % (q, (dev[0][0] - t0) / 1e6, (end - t0) / 1e6, len(gaps),
                             sum(b - a for a, b in gaps) / 1e6))
    # the phases that hold everything else are left out; a span inside another counts in both
    phases = {"lu factor", "lu setup", "lu first stripe", "lu stripe in", "lu earlier columns",
              "lu panel"}
    names = collections.Counter()
    for a, b in gaps:
        for ha, hb, n in host:
            if n in phases: continue
            o = min(b, hb) - max(a, ha)
            if o > 0: names[n] += o
    for n, v in names.most_common(): print("  during the gaps: %-16s %.3f s" % (n, v / 1e6))
