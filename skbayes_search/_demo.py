"""The main job (``python -m skbayes_search``): every search under one budget.

An RBF SVM is tuned on the bundled MAGIC telescope data by our searches and by
the ones a user would pick instead, each given the same wall-clock budget. The
peers without a time limit are sized from measured fit times. Every validation
score is logged with its time by the scorer, so the progress display and the
figure see every method's trials the same way.
"""

from __future__ import annotations

import csv
import math
import os
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from joblib import Parallel, delayed, effective_n_jobs
from scipy.stats import loguniform
from sklearn.base import clone
from sklearn.experimental import enable_halving_search_cv  # noqa: F401
from sklearn.metrics import accuracy_score
from sklearn.model_selection import (
    HalvingRandomSearchCV,
    ParameterSampler,
    RandomizedSearchCV,
    train_test_split,
)
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

from . import BayesSearchCV, FabolasSearchCV, HalvingBayesSearchCV
from ._base import NoTrialFinishedError
from .datasets import load_magic

CV = 3
#: The one search space, as a ``RandomizedSearchCV`` user writes it; our
#: searches take it unchanged.
SPACE = {"svc__C": loguniform(1e-2, 1e2), "svc__gamma": loguniform(1e-4, 1e1)}
OURS = ("BayesSearchCV", "HalvingBayesSearchCV", "FabolasSearchCV")
N_PROBES = 8
#: Worker seconds a fit costs beyond the estimator's own work (dispatch,
#: scoring, bookkeeping), about 10-20 ms here; it dominates on tiny subsets.
FIT_OVERHEAD = 0.02


class LoggedAccuracy:
    """Accuracy scorer that appends ``time, C, gamma, fit rows, score`` to a file.

    It runs in the workers; one short appended line per call.
    """

    def __init__(self, path: str) -> None:
        self.path = path

    def __call__(self, estimator, X, y) -> float:
        score = accuracy_score(y, estimator.predict(X))
        svc = estimator[-1]
        fields = (time.time(), float(svc.C), float(svc.gamma), svc.shape_fit_[0], score)
        with open(self.path, "a") as f:
            f.write(",".join(map(str, fields)) + "\n")
        return score


@dataclass
class Trace:
    """Finished trials of one method, rebuilt from the scorer's log."""

    path: str
    start: float
    full_rows: int
    trials: list = field(default_factory=list)  # (seconds, fit rows, mean score)
    _pending: dict = field(default_factory=dict)
    _offset: int = 0

    def poll(self) -> list:
        """Read new log lines; return the trials they finished."""
        try:
            with open(self.path) as f:
                f.seek(self._offset)
                text = f.read()
        except FileNotFoundError:
            return []
        text = text[: text.rfind("\n") + 1]  # whole lines only
        self._offset += len(text)
        done = []
        for line in text.splitlines():
            t, c, g, rows, score = line.split(",")
            groups = self._pending.setdefault((c, g), [])
            rows = int(rows)
            # The folds of one trial differ by at most a row or two.
            group = next((k for k in groups if abs(k[0][1] - rows) <= 2), None)
            if group is None:
                groups.append(group := [])
            group.append((float(t), rows, float(score)))
            if len(group) == CV:
                groups.remove(group)
                trial = (
                    max(r[0] for r in group) - self.start,
                    round(np.mean([r[1] for r in group])),
                    float(np.mean([r[2] for r in group])),
                )
                self.trials.append(trial)
                done.append(trial)
        return done

    def best_full(self) -> float:
        full = [s for _, r, s in self.trials if r >= 0.9 * self.full_rows]
        return max(full) if full else math.nan


class Progress(threading.Thread):
    """Live display of one search: a tqdm bar over the budget on a terminal
    with tqdm installed, else a line per finished trial (a summary line when
    many finish at once) and a line every few seconds when none does."""

    def __init__(self, name: str, trace: Trace, budget: float, quiet: bool):
        super().__init__(daemon=True)
        self.name, self.trace, self.budget, self.quiet = name, trace, budget, quiet
        self.stop = threading.Event()
        self.bar, self._new = None, []
        if not quiet and sys.stderr.isatty():
            try:
                from tqdm.auto import tqdm

                fmt = "{desc} {bar} {n:.0f}/{total:.0f} s{postfix}"
                self.bar = tqdm(total=budget, desc=f"{name:<22}", bar_format=fmt)
            except ImportError:
                pass

    def run(self) -> None:
        last_line = time.time()
        while not self.stop.wait(0.5):
            last_line = self._show(self.trace.poll(), last_line)
        self._new += self.trace.poll()
        if self._new or self.bar is not None:
            self._show([], 0.0)
        if self.bar is not None:
            self.bar.close()

    def _show(self, done: list, last_line: float) -> float:
        """Print what finished since the last line: every 2 s at most, and a
        line every 5 s even when nothing did."""
        self._new += done
        now = time.time()
        if self.quiet:
            return now
        n, best = len(self.trace.trials), self.trace.best_full()
        best_txt = "-" if math.isnan(best) else f"{best:.4f}"
        if self.bar is not None:
            self.bar.n = now - self.trace.start  # may pass the budget
            self.bar.set_postfix_str(f"{n} trials, best on all rows {best_txt}")
            self.bar.refresh()
            return now
        wait = now - last_line
        if (self._new and wait < 2) or (not self._new and wait < 5):
            return last_line
        head = f"  {self.name:<22}{now - self.trace.start:6.1f} s  "
        if len(self._new) == 1:
            _, rows, score = self._new[0]
            what = f"trial {n} on {rows:,} rows: CV {score:.4f}"
        elif self._new:
            rows = sorted(r for _, r, _ in self._new)
            span = f"{rows[0]:,}" + (f"-{rows[-1]:,}" if rows[-1] > rows[0] else "")
            what = f"trials {n - len(self._new) + 1}-{n} on {span} rows"
        else:
            what = f"running, {n} trials so far"
        print(f"{head}{what:<34}  best on all rows: {best_txt}", flush=True)
        self._new = []
        return now


def _probe(model, params, X_fit, y_fit, X_val, y_val) -> float:
    """Seconds of one fit and score (the unit a search's cost is made of)."""
    start = time.perf_counter()
    est = clone(model).set_params(**params).fit(X_fit, y_fit)
    accuracy_score(y_val, est.predict(X_val))
    return time.perf_counter() - start


def calibrate(model, X, y, n_workers: int, seed: int) -> tuple[float, float]:
    """Mean seconds of a fit of a random setting on one CV fold's training
    rows, and the exponent of its growth with the rows.

    Measured on a third and a ninth of a fold (cheap, so enough settings to
    average over the slow ones) and extrapolated.
    """
    settings = list(ParameterSampler(SPACE, N_PROBES, random_state=seed))
    idx = np.random.default_rng(seed).permutation(len(y))
    n_fit = len(y) * (CV - 1) // CV
    # A fraction f of a fold: f of its training rows, scored on f of its
    # validation rows, as halving's rungs are.
    parts = []
    for k in (3, 9):
        fit, val = idx[: n_fit // k], idx[n_fit:][: (len(y) - n_fit) // k]
        parts.append((X[fit], y[fit], X[val], y[val]))
    # The searches' own process pool: started here, so that no search pays
    # for starting it.
    times = Parallel(n_jobs=n_workers)(
        delayed(_probe)(model, p, *part) for part in parts for p in settings
    )
    t_third, t_ninth = np.mean(times[:N_PROBES]), np.mean(times[N_PROBES:])
    exponent = float(np.clip(math.log(t_third / t_ninth) / math.log(3), 1.0, 2.5))
    return float(t_third * 3**exponent), exponent


def halving_seconds(m: int, n: int, t_full: float, p: float, workers: int) -> float:
    """Predicted wall time of ``HalvingRandomSearchCV(n_candidates=m, factor=3,
    min_resources="exhaust")`` on ``n`` rows (scikit-learn's rung schedule)."""
    k = 1
    while 3**k <= m:
        k += 1  # 1 + floor(log3 m) rungs are required
    r0 = max(CV * 2 * 2, n // 3 ** (k - 1))
    possible = 1
    while r0 * 3**possible <= n:
        possible += 1
    cost, cands = 0.0, m
    for i in range(min(k, possible)):
        rows = min(r0 * 3**i, n)
        fit = t_full * (rows / n) ** p + FIT_OVERHEAD
        cost += math.ceil(cands * CV / workers) * fit
        cands = math.ceil(cands / 3)
    return cost


def size_peers(budget, n, t_fit, p, workers, cap) -> tuple[int, int]:
    """``n_iter`` of random search and ``n_candidates`` of halving that take
    about ``budget`` seconds by the measured fit times."""
    n_iter = max(1, int(budget * workers / (CV * (t_fit + FIT_OVERHEAD))))
    # The cost is not monotone in m (one more rung starts on fewer rows):
    # scan a geometric grid, keep the largest m that fits.
    best, m = 3, 3
    while m < cap:
        m = m + 1 if m < 30 else int(m * 1.05) + 1
        cost = halving_seconds(min(m, cap), n, t_fit, p, workers)
        if cost <= budget:
            best = min(m, cap)
        elif cost > 3 * budget:
            break
    m = best
    return min(n_iter, cap), min(m, cap)


def run(
    *,
    budget: float = 30.0,
    n_rows: int | None = None,
    n_iter: int | None = None,
    n_jobs: int = -1,
    seed: int = 0,
    quiet: bool = False,
    out: str | os.PathLike = "skbayes_search_demo",
) -> list[dict]:
    """Run every search for ``budget`` seconds; print and write the results."""
    job_start = time.time()
    say = (lambda *a: None) if quiet else (lambda *a: print(*a, flush=True))
    X, y = load_magic()
    if n_rows is not None and n_rows < len(y):
        X, _, y, _ = train_test_split(
            X, y, train_size=n_rows, stratify=y, random_state=seed
        )
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.25, stratify=y, random_state=seed
    )
    workers = effective_n_jobs(n_jobs)
    model = make_pipeline(StandardScaler(), SVC())
    cap = n_iter or 100_000
    say(
        f"MAGIC gamma telescope (bundled): {len(y_train):,} training rows, "
        f"{len(y_test):,} held-out test rows. RBF SVM, C and gamma log-uniform, "
        f"{CV}-fold CV, {workers} workers, {budget:g} s of search per method."
    )
    t_fit, p = calibrate(model, X_train, y_train, workers, seed)
    n_random, n_halving = size_peers(budget, len(y_train), t_fit, p, workers, cap)
    say(
        f"Sizing the peers: fits of {N_PROBES} random settings on a third and a "
        f"ninth of a fold's rows predict {t_fit:.2f} s per fit on all "
        f"{len(y_train) * (CV - 1) // CV:,} (time grows as rows^{p:.1f}), "
        f"so RandomizedSearchCV gets n_iter="
        f"{n_random} and HalvingRandomSearchCV n_candidates={n_halving}, "
        f"to take about {budget:g} s each.\n"
    )
    # a trial fits one model per fold, the workers sharing the folds
    trial_seconds = CV * (t_fit + FIT_OVERHEAD) / min(workers, CV)
    if trial_seconds > budget / 3:
        say(
            f"Note: one trial on all rows takes about {trial_seconds:.0f} s on this "
            f"machine, a third of the budget or more, so the searches that measure "
            f"settings on all rows may finish few trials or none; "
            f"--budget {suggested_budget(trial_seconds)} gives them room.\n"
        )
    logdir = Path(tempfile.mkdtemp(prefix="skbayes_demo_"))
    common = dict(cv=CV, n_jobs=n_jobs, random_state=seed, return_train_score=False)
    methods = {
        "BayesSearchCV": lambda sc: BayesSearchCV(
            model, SPACE, n_iter=cap, max_time=budget, scoring=sc, **common
        ),
        "HalvingBayesSearchCV": lambda sc: HalvingBayesSearchCV(
            model, SPACE, n_iter=cap, max_time=budget, scoring=sc, **common
        ),
        "FabolasSearchCV": lambda sc: FabolasSearchCV(
            model, SPACE, n_iter=cap, max_time=budget, scoring=sc, **common
        ),
        "RandomizedSearchCV": lambda sc: RandomizedSearchCV(
            model, SPACE, n_iter=n_random, scoring=sc, **common
        ),
        "HalvingRandomSearchCV": lambda sc: HalvingRandomSearchCV(
            model,
            SPACE,
            n_candidates=n_halving,
            min_resources="exhaust",  # the last rung fits on all rows
            scoring=sc,
            **common,
        ),
    }
    full_rows = len(y_train) * (CV - 1) // CV
    rows, traces = [], {}
    for name, make in methods.items():
        path = str(logdir / f"{name}.log")
        search = make(LoggedAccuracy(path))
        trace = traces[name] = Trace(path, time.time(), full_rows)
        progress = Progress(name, trace, budget, quiet)
        progress.start()
        finished = True
        try:
            search.fit(X_train, y_train)
        except NoTrialFinishedError:
            # a slow or busy machine: the row says so, the other methods run
            finished = False
        finally:
            wall = time.time() - trace.start
            progress.stop.set()
            progress.join()
        row = dict(method=name, best_cv=math.nan, test=math.nan, trials=0, wall=wall)
        if finished:
            row.update(
                best_cv=search.best_score_,
                test=accuracy_score(y_test, search.predict(X_test)),
                trials=len(search.cv_results_["params"]),
            )
        rows.append(row)
    table = format_table(rows)
    verdict = conclude(rows, len(y_test))
    print(f"\n{table}\n\n{verdict}")
    walls = {r["method"]: r["wall"] for r in rows}
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.md").write_text(f"{table}\n\n{verdict}\n")
    with open(out / "results.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    print(f"Table written to {out / 'results.md'}; {plot(traces, walls, budget, out)}")
    shutil.rmtree(logdir, ignore_errors=True)
    print(f"The whole job took {time.time() - job_start:.0f} s.")
    return rows


def suggested_budget(trial_seconds: float) -> int:
    """A budget, in whole tens of seconds, of about ten trials on all rows."""
    return int(10 * math.ceil(trial_seconds))


def format_table(rows: list[dict]) -> str:
    lines = [
        "| method | best CV score | test accuracy | trials | wall s |",
        "|---|---|---|---|---|",
    ]

    def score(value: float) -> str:
        return f"{value:.4f}" if math.isfinite(value) else "-"

    for r in rows:
        lines.append(
            f"| {r['method']} | {score(r['best_cv'])} | {score(r['test'])} | "
            f"{r['trials']} | {r['wall']:.1f} |"
        )
    return "\n".join(lines)


def conclude(rows: list[dict], n_test: int) -> str:
    """Sentences on the numbers: who won on held-out data, and by how much
    against the noise of the test set; which methods finished no trial."""
    done = [r for r in rows if math.isfinite(r["test"])]
    missed = [r["method"] for r in rows if not math.isfinite(r["test"])]
    note = ""
    if missed:
        note = (
            f"{' and '.join(missed)} finished no trial within the budget: one "
            "trial costs too much of it on this machine; give more with --budget "
            "or fewer rows with --n-rows."
        )
    ours_done = [r for r in done if r["method"] in OURS]
    peers_done = [r for r in done if r["method"] not in OURS]
    if not ours_done or not peers_done:
        return f"No comparison: {note}"
    verdict = _verdict(ours_done, peers_done, n_test)
    return f"{verdict}\n{note}" if note else verdict


def _verdict(ours_done: list[dict], peers_done: list[dict], n_test: int) -> str:
    ours = max(ours_done, key=lambda r: r["test"])
    peer = max(peers_done, key=lambda r: r["test"])
    acc = (ours["test"] + peer["test"]) / 2
    noise = 200 * math.sqrt(acc * (1 - acc) / n_test)  # two standard errors, pp
    gap = 100 * (ours["test"] - peer["test"])
    o = f"{ours['method']} ({100 * ours['test']:.2f} %, {ours['wall']:.0f} s)"
    q = f"{peer['method']} ({100 * peer['test']:.2f} %, {peer['wall']:.0f} s)"
    if gap >= noise:
        return (
            f"We won: {o} beat the best peer, {q}, by {gap:.2f} pp on held-out "
            f"data, more than the {noise:.2f} pp noise of {n_test:,} test rows."
        )
    if -gap >= noise:
        return (
            f"We lost: the best peer, {q}, beat our best, {o}, by {-gap:.2f} pp "
            f"on held-out data, more than the {noise:.2f} pp noise of "
            f"{n_test:,} test rows."
        )
    if abs(gap) < 0.005:
        where = "level with"
    else:
        where = f"{abs(gap):.2f} pp " + ("ahead of" if gap > 0 else "behind")
    return (
        f"A tie: our best, {o}, is {where} the best peer, {q}, within the "
        f"{noise:.2f} pp noise of {n_test:,} test rows."
    )


def plot(traces: dict, walls: dict, budget: float, out: Path) -> str:
    """Best CV score on all rows against time, and every trial as a dot."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return "no figure: matplotlib is not installed (pip install matplotlib)."
    fig = Figure(figsize=(7, 4.2))
    ax = fig.add_subplot()
    for i, (name, trace) in enumerate(traces.items()):
        color = f"C{i}"
        t, r, s = (np.array(v, dtype=float) for v in zip(*trace.trials or [(0, 0, 0)]))
        full = r >= 0.9 * trace.full_rows
        ax.scatter(t[~full], s[~full], s=8, color=color, alpha=0.35, lw=0)
        if full.any():
            order = np.argsort(t[full])
            x = np.append(t[full][order], walls[name])
            best = np.maximum.accumulate(s[full][order])
            ax.step(x, np.append(best, best[-1]), where="post", color=color, label=name)
            ax.plot(t[full], s[full], "o", ms=3, color=color)
    ax.axvline(budget, color="grey", ls=":", lw=1)
    ax.set(xlabel="wall seconds since the search started", ylabel="CV accuracy")
    ax.set_title("Best CV score on all rows (lines); trials on subsets (dots)")
    scores = [s for tr in traces.values() for _, _, s in tr.trials]
    if scores:
        top = max(scores)
        ax.set_ylim(max(min(scores), top - 0.1), top + 0.01)
    ax.legend(loc="lower right")
    fig.tight_layout()
    path = out / "best_score_vs_time.png"
    fig.savefig(path, dpi=110)
    return f"figure saved to {path}."
