#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# collective_model.py — the alpha-beta cost model of libtrainrt's all-reduce (issue #20): fits
# alpha (seconds per message hop) and beta (seconds per byte per link) to measured times of the TCP
# ring, checks the fit on the measured points, and predicts ring vs recursive doubling vs
# hierarchical at 64/512/4096 nodes. Plain python3 (no numpy): a 2-parameter least squares.
# Input: the lines bench/collective_model.sh writes, "ALGO P L BYTES TIME_US WRONG" (ALGO is tcp
# (the ring), choice (the TCP backend's own choice), shm, shmbcast or hier; P ranks, L per node), and "# cores: C" (the machine's CPUs);
# repeated points are reduced to their median.
import math
import sys

USAGE = """usage: collective_model.py DATA [PLOTDIR]  full report (fits, validation, predictions); with
                                           PLOTDIR, also gnuplot data: measured.dat, predicted.dat
       collective_model.py --fit DATA      only the fits: 'ring alpha_us=A beta_ns_per_byte=B points=N'
                                           and 'shared-cpu alpha_us=A beta_ns_per_byte=B points=N'"""


# Costs in seconds of an all-reduce of n bytes over p ranks (one rank per link end).
def ring(p, n, a, b):
    """Reduce-scatter + all-gather around a ring: 2(p-1) hops, each link carries 2(p-1)/p n."""
    return 2 * (p - 1) * a + 2 * (p - 1) / p * n * b


def rdoubling(p, n, a, b):
    """Recursive doubling: log2 p exchanges of the whole buffer (p a power of two)."""
    return math.log2(p) * (a + n * b)


def rabenseifner(p, n, a, b):
    """Recursive halving reduce-scatter + doubling all-gather: ring's bytes, 2 log2 p hops."""
    return 2 * math.log2(p) * a + 2 * (p - 1) / p * n * b


# TCP_DOUBLING_MAX_BYTES in runtime/comm/backend_tcp.c: the largest all-reduce that takes doubling.
DOUBLING_MAX = 64 << 10


def crossover(p, a, b):
    """Largest n (bytes) at which recursive doubling is no slower than the ring, or inf."""
    lg = math.log2(p)
    den = b * (lg - 2 * (p - 1) / p)
    if den <= 0 or a <= 0:
        return math.inf  # p <= 2: doubling has the ring's bytes and fewer hops at every size
    return a * (2 * (p - 1) - lg) / den


def die(msg):
    sys.stderr.write("collective_model.py: %s\n" % msg)
    sys.exit(2)


def load(path):
    pts = {}
    cores = 0
    try:
        f = open(path)
    except OSError as e:
        die("cannot read %s: %s" % (path, e.strerror))
    with f:
        for no, line in enumerate(f, 1):
            w = line.split()
            if w[:2] == ["#", "cores:"] and len(w) == 3 and w[2].isdigit() and int(w[2]) > 0:
                cores = int(w[2])
            if not w or w[0].startswith("#"):
                continue
            try:
                algo, p, loc, n, t, wrong = w[0], int(w[1]), int(w[2]), int(w[3]), float(w[4]), float(w[5])
            except (ValueError, IndexError):
                die("%s:%d: not 'ALGO P L BYTES TIME_US WRONG': %s" % (path, no, line.strip()))
            if wrong != 0:
                die("%s:%d: %s %d ranks %d bytes had %g wrong elements; a wrong result is not timed"
                    % (path, no, algo, p, n, wrong))
            if t <= 0 or p < 1 or loc < 1:
                die("%s:%d: time and rank counts must be positive: %s" % (path, no, line.strip()))
            pts.setdefault((algo, p, loc, n), []).append(t * 1e-6)
    med = {}
    for k, ts in pts.items():
        ts.sort()
        m = len(ts)
        med[k] = ts[m // 2] if m % 2 else (ts[m // 2 - 1] + ts[m // 2]) / 2
    if not cores:
        die("%s has no '# cores: C' line (the CPUs the ranks shared)" % path)
    return med, cores


def fit(rows):
    """Least squares of t = a*x1 + b*x2 in relative error (weights 1/t^2): the points span six
    decades of time, and plain least squares would fit only the largest messages."""
    s11 = s12 = s22 = r1 = r2 = 0.0
    for x1, x2, t in rows:
        w = 1 / (t * t)
        s11 += w * x1 * x1
        s12 += w * x1 * x2
        s22 += w * x2 * x2
        r1 += w * x1 * t
        r2 += w * x2 * t
    det = s11 * s22 - s12 * s12
    if len(rows) < 2 or abs(det) <= 1e-12 * s11 * s22:
        die("need points at two or more sizes to fit alpha and beta")
    return (r1 * s22 - r2 * s12) / det, (s11 * r2 - s12 * r1) / det


def ring_points(med, algo="tcp"):
    """Points of a ring all-reduce with every rank's block non-empty (n >= 4p bytes of float32):
    with fewer elements than ranks, empty blocks skip their hops and the ring's formula does
    not describe what runs."""
    return sorted((p, n, t) for (al, p, _, n), t in med.items() if al == algo and n >= 4 * p and p > 1)


def share(p, cores):
    """How many ranks share one CPU: on loopback every byte is copied by the CPUs, so p ranks on
    fewer cores get cores/p of a link's bandwidth each."""
    return max(1.0, p / cores)


def fit_ring(med, cores=0):
    """The ring's formula; with cores, beta is that of a rank with a CPU to itself (x share)."""
    pts = ring_points(med)
    a, b = fit([(2 * (p - 1), 2 * (p - 1) / p * n * (share(p, cores) if cores else 1), t) for p, n, t in pts])
    return a, b, pts


def line_fit(pts):
    """t = a + n*b over (n, t) points, same relative weighting."""
    return fit([(1.0, n, t) for n, t in pts])


def human(n):
    if n == math.inf:
        return "any size"
    for unit, s in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= s:
            v = n / s
            return ("%.0f %s" if v >= 10 or v == int(v) else "%.1f %s") % (v, unit)
    return "%.0f B" % n


def gbs(b):
    return "%.2f GB/s" % (1e-9 / b) if b > 0 else "no bandwidth term (beta <= 0)"


def us(t):
    return "%.0f" % (t * 1e6) if t >= 1e-3 else "%.1f" % (t * 1e6)


def validate(title, pts, model):
    """Prints the model against every measured point and the error per rank count."""
    print(title)
    print()
    print("| ranks | size | measured (us) | model (us) | error |")
    print("|---|---|---|---|---|")
    errs = {}
    for p, n, t in pts:
        m = model(p, n)
        errs.setdefault(p, []).append(abs(m - t) / t)
        print("| %d | %s | %s | %s | %+.0f%% |" % (p, human(n), us(t), us(m), (m - t) / t * 100))
    print()
    for p in sorted(errs):
        e = sorted(errs[p])
        print("p=%d: median |error| %.0f%%, max %.0f%% over %d sizes" % (p, e[len(e) // 2] * 100, e[-1] * 100, len(e)))
    print()


def plot_data(pts, a, b, cores, d):
    """measured.dat: 'p bytes measured_us model_us' per TCP point, a blank line between rank counts;
    predicted.dat: 'bytes ring doubling rabenseifner' (us) at 512 nodes on assumed 100 Gb/s IB."""
    with open(d + "/measured.dat", "w") as f:
        last = None
        for p, n, t in pts:
            if last is not None and p != last:
                f.write("\n\n")
            last = p
            f.write("%d %d %.3f %.3f\n" % (p, n, t * 1e6, ring(p, n, a, b * share(p, cores)) * 1e6))
    with open(d + "/predicted.dat", "w") as f:
        na, nb = IB[0][1], IB[0][2]
        for k in range(3, 31):
            n = 1 << k
            f.write("%d %.3f %.3f %.3f\n" % (n, ring(512, n, na, nb) * 1e6, rdoubling(512, n, na, nb) * 1e6,
                                            rabenseifner(512, n, na, nb) * 1e6))


# Assumed, not measured: a typical InfiniBand HCA's small-message latency (2-5 us; 3 us taken)
# and the link rate's seconds per byte.
IB = [("assumed IB 100 Gb/s", 3e-6, 8 / 100e9), ("assumed IB 200 Gb/s", 3e-6, 8 / 200e9)]


def report(med, cores, plotdir=None):
    a0, b0, pts = fit_ring(med)
    print("## Per rank count: t = 2(p-1) alpha + 2(p-1)/p n beta fitted to each p alone (%d cores)" % cores)
    print("| ranks | alpha (us per hop) | beta (ns/B) | link |")
    print("|---|---|---|---|")
    for p in sorted({q for q, _, _ in pts}):
        ap, bp = fit([(2 * (p - 1), 2 * (p - 1) / p * n, t) for q, n, t in pts if q == p])
        print("| %d | %.1f | %.3f | %s |" % (p, ap * 1e6, bp * 1e9, gbs(bp)))
    print()
    validate("## Fit 1: TCP ring, t = 2(p-1) alpha + 2(p-1)/p n beta, one alpha and beta for all p\n"
             "alpha = %.1f us per hop, beta = %.3f ns/B per link (%s), %d points (n >= 4p bytes)"
             % (a0 * 1e6, b0 * 1e9, gbs(b0), len(pts)), pts, lambda p, n: ring(p, n, a0, b0))
    a, b, _ = fit_ring(med, cores)
    validate("## Fit 2: shared CPUs, t = 2(p-1) alpha + 2(p-1)/p n beta max(1, p/%d)\n"
             "alpha = %.1f us per hop, beta = %.3f ns/B per link with a CPU per rank (%s)"
             % (cores, a * 1e6, b * 1e9, gbs(b)), pts, lambda p, n: ring(p, n, a, b * share(p, cores)))

    choice = sorted((p, n, t) for (al, p, _, n), t in med.items() if al == "choice" and ("tcp", p, p, n) in med)
    if choice:
        print("## The TCP backend's choice (recursive doubling up to %s in power-of-two rings) vs the ring"
              % human(DOUBLING_MAX))
        print("| ranks | size | ring (us) | choice (us) | ring / choice | model (fit 2) |")
        print("|---|---|---|---|---|---|")
        for p, n, t in choice:
            r = med[("tcp", p, p, n)]
            bs = b * share(p, cores)
            m = ring(p, n, a, bs) / (rdoubling(p, n, a, bs) if n <= DOUBLING_MAX else ring(p, n, a, bs))
            print("| %d | %s | %s | %s | %.2f | %.2f |" % (p, human(n), us(r), us(t), r / t, m))
        print()

    # Shared memory inside a node, fitted per node size as t = a + n b (all-reduce and broadcast
    # of the hierarchical backend), then the hierarchical model checked where it was measured.
    intra = {}
    for loc in sorted({k[1] for k in med if k[0] == "shm"}):
        ar = sorted((n, t) for (al, p, _, n), t in med.items() if al == "shm" and p == loc)
        bc = sorted((n, t) for (al, p, _, n), t in med.items() if al == "shmbcast" and p == loc)
        if len(ar) >= 2 and len(bc) >= 2:
            intra[loc] = (line_fit(ar), line_fit(bc))
    hier_pts = sorted((p, loc, n, t) for (al, p, loc, n), t in med.items() if al == "hier" and loc in intra)
    if intra:
        print("## Fit: shared memory inside a node, t = a + n b per node size L")
        print("| L | all-reduce a (us) | all-reduce b (ns/B) | broadcast a (us) | broadcast b (ns/B) |")
        print("|---|---|---|---|---|")
        for loc, ((aa, ab), (ba, bb)) in sorted(intra.items()):
            print("| %d | %.1f | %.3f | %.1f | %.3f |" % (loc, aa * 1e6, ab * 1e9, ba * 1e6, bb * 1e9))
        print()
    if hier_pts:
        print("## Validation: hierarchical = shm all-reduce(L) + TCP ring(p/L nodes) + shm broadcast(L)")
        print("| ranks | nodes x L | size | measured (us) | model (us) | error |")
        print("|---|---|---|---|---|---|")
        for p, loc, n, t in hier_pts:
            (aa, ab), (ba, bb) = intra[loc]
            m = aa + n * ab + ring(p // loc, n, a, b * share(p, cores)) + ba + n * bb
            print("| %d | %dx%d | %s | %s | %s | %+.0f%% |" % (p, p // loc, loc, human(n), us(t), us(m), (m - t) / t * 100))
        print()

    if plotdir:
        plot_data(pts, a, b, cores, plotdir)
    nets = [("measured loopback", a, b)] + IB
    sizes = [8, 64 << 10, 1 << 20, 64 << 20, 1 << 30]
    for name, na, nb in nets:
        print("## Prediction, one rank per node: %s (alpha %.1f us, beta %.3f ns/B)" % (name, na * 1e6, nb * 1e9))
        print("| nodes | size | ring (us) | recursive doubling (us) | Rabenseifner (us) | best |")
        print("|---|---|---|---|---|---|")
        for p in (64, 512, 4096):
            for n in sizes:
                r, d, h = ring(p, n, na, nb), rdoubling(p, n, na, nb), rabenseifner(p, n, na, nb)
                best = min((r, "ring"), (d, "doubling"), (h, "Rabenseifner"))[1]
                print("| %d | %s | %s | %s | %s | %s |" % (p, human(n), us(r), us(d), us(h), best))
        print()
        print("crossover (doubling beats the ring below): " +
              ", ".join("p=%d %s" % (p, human(crossover(p, na, nb))) for p in (2, 4, 8, 64, 512, 4096)))
        print()
    if 4 in intra:
        (aa, ab), (ba, bb) = intra[4]
        print("## Prediction, 4 ranks per node (this machine's shared memory inside a node)")
        print("| nodes | size | net | flat ring over all ranks (us) | hierarchical (us) |")
        print("|---|---|---|---|---|")
        for p in (64, 512, 4096):
            for n in (64 << 10, 64 << 20):
                for name, na, nb in nets[::2]:
                    flat = ring(4 * p, n, na, nb)
                    hier = aa + n * ab + ring(p, n, na, nb) + ba + n * bb
                    print("| %d | %s | %s | %s | %s |" % (p, human(n), name, us(flat), us(hier)))
        print()


def main(argv):
    if len(argv) == 3 and argv[1] == "--fit":
        med, cores = load(argv[2])
        for name, c in (("ring", 0), ("shared-cpu", cores)):
            a, b, pts = fit_ring(med, c)
            print("%s alpha_us=%.3f beta_ns_per_byte=%.5f points=%d" % (name, a * 1e6, b * 1e9, len(pts)))
    elif len(argv) in (2, 3) and not argv[1].startswith("-"):
        report(*load(argv[1]), *argv[2:])
    else:
        sys.stderr.write(USAGE + "\n")
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
