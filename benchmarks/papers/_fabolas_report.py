"""The report of ``benchmarks/papers/fabolas.py``: pure functions on its run
records (no fitting, no I/O), and the paper's figures it prints beside ours."""

from __future__ import annotations

import math

from ..execute import incumbents_for
from ..metrics import median_spread, target_threshold, time_to_target
from ..refit import incumbent_key

METHODS = ("fabolas", "es", "mtbo", "hyperband", "random")
#: Hyperband's eta (paper 001, section 4).
ETA = 3
#: Hyperband's top rung: r * eta^k rows, which rounding leaves a little short
TOP_RUNG = 0.99
#: Times (shares of the budget) at which incumbents are refitted and reported.
GRID_SHARES = tuple(2.0**k for k in range(-6, 1))

#: What the paper reports (paper 001, text of section 4 and figure captions).
PAPER = [
    (
        "Abstract",
        "FABOLAS often finds high-quality solutions 10 to 100 times faster than"
        " other state-of-the-art Bayesian optimization methods or ... Hyperband",
    ),
    (
        "Fig. 3 (covtype, vehicle, MNIST SVM)",
        "FABOLAS finds a good configuration between 10 and 1000 times faster"
        " than the other methods",
    ),
    (
        "§4.2, Hyperband",
        "Hyperband required a relatively long time until it recommended its"
        " first hyperparameter setting, but this first recommendation was"
        " already very good ... FABOLAS typically returned configurations with"
        " the same quality another order of magnitude faster",
    ),
    (
        "§4.1 / Fig. 2 (MNIST SVM grid)",
        "EI and ES ... find the best configuration (error 1.4%) after around"
        " 10^5 seconds, roughly five times faster than random search. MTBO ..."
        " around 2x10^4 seconds ... FABOLAS is roughly another order of"
        " magnitude faster than MTBO",
    ),
    (
        "§4.3 / Fig. 4 (CNNs)",
        "it found good configurations about 10 times faster than vanilla"
        " Bayesian optimization",
    ),
]


# ----------------------------------------------------------------------
# Pure functions (tested in tests/test_papers_fabolas.py)
# ----------------------------------------------------------------------
def hyperband_brackets(
    max_resource: int, min_resource: int, eta: int = ETA
) -> list[tuple[int, int]]:
    """Li et al.'s brackets: ``(n_configurations, min_resource)`` for
    ``s = s_max, ..., 0`` with ``s_max = floor(log_eta(R / r_min))``,
    ``n = ceil((s_max + 1) / (s + 1) * eta^s)`` and ``r = R * eta^-s``."""
    ratio = max_resource / min_resource
    s_max = math.floor(math.log(ratio) / math.log(eta) + 1e-9)
    out = []
    for s in range(s_max, -1, -1):
        n = math.ceil((s_max + 1) / (s + 1) * eta**s)
        r = round(max_resource * eta ** (-s))
        out.append((n, max(r, min_resource)))
    return out


def grid_times(budget: float) -> list[float]:
    """The report's times: budget / 64, ..., budget (doubling)."""
    return [budget * g for g in GRID_SHARES]


def incumbent_at(incumbents: list[dict], t: float) -> dict | None:
    """The incumbent a run would have returned if stopped at ``t`` seconds."""
    last = None
    for inc in incumbents:
        if inc["elapsed"] > t:
            break
        last = inc
    return last


def peer_incumbents(trials: list[dict], method: str) -> list[dict]:
    """Incumbents of random search (its best trial) and of Hyperband: the best
    configuration evaluated on the top rung (all rows, up to the rounding of
    ``r * eta^k``), the paper's incumbent estimation, so none before the
    first bracket ends."""
    if method == "hyperband":
        trials = [t for t in trials if t["fraction"] >= TOP_RUNG]
    return incumbents_for(trials, method)


def first_incumbent(record: dict, budget: float) -> float:
    """Seconds until the run named its first incumbent (inf if not in budget)."""
    times = [i["elapsed"] for i in record.get("incumbents", [])]
    return min(times) if times and min(times) <= budget else math.inf


def incumbent_errors(record: dict, refits: dict, times: list[float]) -> list[float]:
    """Test error of the run's incumbent at each of ``times`` (NaN before
    its first incumbent or while a refit is missing)."""
    out = []
    for t in times:
        inc = incumbent_at(record.get("incumbents", []), t)
        score = math.nan
        if inc is not None:
            score = refits.get(incumbent_key(inc["params"], 1.0), {}).get(
                "test_score", math.nan
            )
        out.append(1.0 - score)
    return out


def speedups(times_to_target: dict[str, list[float]], ref: str) -> dict[str, float]:
    """Median time to target of each method over that of ``ref`` (> 1: ``ref``
    is faster; inf when the method never reached it; NaN when ``ref`` never did)."""
    base = median_spread(times_to_target.get(ref, []))[0]
    out = {}
    for name, values in times_to_target.items():
        med = median_spread(values)[0]
        out[name] = med / base if math.isfinite(base) and base > 0 else math.nan
    return out


def _fmt(values: list[float], pct: bool = True) -> str:
    med, lo, hi = median_spread(values)
    if math.isnan(med):
        return "-"
    k = 100.0 if pct else 1.0
    if not math.isfinite(med):
        return "never"
    return f"{k * med:.1f} [{k * lo:.1f}, {k * hi:.1f}]"


def build_report(records: list[dict], refits: dict, meta: dict) -> str:
    """The markdown report: our table, then the paper's figures."""
    times = grid_times(meta["budget"])
    by_method: dict[str, list[dict]] = {}
    for rec in records:
        if rec.get("status") == "ok":
            by_method.setdefault(rec["method"], []).append(rec)
    errors = {
        m: [incumbent_errors(r, refits, times) for r in by_method.get(m, [])]
        for m in METHODS
    }
    finals = [e[-1] for runs in errors.values() for e in runs if math.isfinite(e[-1])]
    lines = [
        f"# FABOLAS (Klein et al. 2017), Fig. 3 at small scale: {meta['task']}",
        "",
        f"{meta['n_search']} search rows ({meta['n_train']} training, "
        f"{meta['n_val']} validation), {meta['n_test']} test rows; budget "
        f"{meta['budget']:g} s per run, n_jobs=1, seeds {meta['seeds']}. "
        "Test error (%) of the incumbent refitted on all search rows, median "
        "[min, max] over the seeds that have an incumbent by then ('-': none "
        "has), at each time (s):",
        "",
        "| method | runs | " + " | ".join(f"{t:.3g}" for t in times) + " | load |",
        "|---" * (len(times) + 3) + "|",
    ]
    ttt: dict[str, list[float]] = {}
    target = None
    if finals:
        best_acc = 1.0 - min(finals)
        target = 1.0 - target_threshold(best_acc, classification=True)
    for m in METHODS:
        runs = errors[m]
        loads = [r["load_before"] for r in by_method.get(m, [])]
        cells = [_fmt([e[i] for e in runs]) for i in range(len(times))]
        load = _fmt(loads, pct=False) if loads else "-"
        lines.append(f"| {m} | {len(runs)} | " + " | ".join(cells) + f" | {load} |")
        if target is not None:
            ttt[m] = [time_to_target(times, [-x for x in e], -target) for e in runs]
    if target is not None:
        ups = speedups(ttt, "fabolas")
        lines += [
            "",
            f"Time to a test error of at most {100 * target:.2f} % (the best final "
            "error of any run plus 0.5 points), read on the times above; "
            "ratio = the method's median over FABOLAS's (> 1: FABOLAS faster):",
            "",
            "| method | time to target (s) | ratio to FABOLAS | first incumbent (s) "
            "| trials |",
            "|---|---|---|---|---|",
        ]
        for m in METHODS:
            ratio = ups.get(m, math.nan)
            shown = "-" if math.isnan(ratio) else f"{ratio:.2g}"
            runs = by_method.get(m, [])
            first = [first_incumbent(r, meta["budget"]) for r in runs]
            n_trials = [len(r.get("trials", [])) for r in runs]
            lines.append(
                f"| {m} | {_fmt(ttt.get(m, []), pct=False)} | {shown} "
                f"| {_fmt(first, pct=False)} | {_fmt(n_trials, pct=False)} |"
            )
    lines += ["", "The paper's figures (quoted from its text):", ""]
    lines += [f'- {where}: "{text}"' for where, text in PAPER]
    lines += [
        "",
        "What differs: one data set of "
        f"{meta['n_search']} search rows instead of covtype/vehicle/MNIST "
        "(50,000+ rows); a budget of seconds instead of hours to days; 'load' "
        "is the 1-minute load average of the machine when each run started "
        "(2 cores shared with other work); the time to target is read at "
        "doubling times, so ratios are coarse (factors of 2).",
    ]
    return "\n".join(lines) + "\n"
