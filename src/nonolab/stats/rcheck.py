"""Run the reference R implementations (lme4 + lmerTest, BradleyTerry2) via ``Rscript``.

Used by ``tests/stats/test_r_crosscheck.py`` to cross-check :mod:`nonolab.stats.mixed_models` and
:mod:`nonolab.stats.ranking`, never by the workflow itself (R is not a run-time dependency). Data go to
R as CSV files in a work folder; results come back as CSV. Every function raises
:class:`RError` (with R's stderr) when R fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

R_PACKAGES: tuple[str, ...] = ("lme4", "lmerTest", "BradleyTerry2")


class RError(RuntimeError):
    """Rscript is missing, a package is missing, or the R code failed."""


def rscript() -> str | None:
    """Return the path of ``Rscript`` (``$RSCRIPT`` overrides), or None when absent."""
    return os.environ.get("RSCRIPT") or shutil.which("Rscript")


def r_available(packages: Sequence[str] = R_PACKAGES) -> bool:
    """Return True when ``Rscript`` runs and every package in ``packages`` loads."""
    exe = rscript()
    if exe is None:
        return False
    code = "; ".join(f"suppressMessages(library({p}))" for p in packages)
    try:
        r = subprocess.run([exe, "-e", code], capture_output=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def run_r(code: str, workdir: str | os.PathLike, timeout_s: float = 600) -> str:
    """Run R ``code`` with ``workdir`` as working directory; return its stdout.

    Raises :class:`RError` with R's stderr on a non-zero exit.
    """
    exe = rscript()
    if exe is None:
        raise RError("Rscript not found (install r-base-core, or set RSCRIPT)")
    wd = Path(workdir)
    wd.mkdir(parents=True, exist_ok=True)
    script = wd / "nonolab_check.R"
    script.write_text(code, encoding="utf-8")
    r = subprocess.run(
        [exe, "--vanilla", str(script)],
        cwd=wd,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    if r.returncode != 0:
        raise RError(f"Rscript failed (exit {r.returncode}):\n{r.stderr[-4000:]}")
    return r.stdout


@dataclass(frozen=True)
class LmerResult:
    """One lme4 fit: ``fixed`` (index term; ``estimate``, ``se``, ``df`` Satterthwaite, ``p``),
    variances (squared outcome units), REML log-likelihood and lme4's messages."""

    fixed: pd.DataFrame
    var_participant: float
    var_puzzle: float
    var_residual: float
    reml_loglik: float
    messages: str


_LMER_CODE = r"""
suppressMessages({library(lme4); library(lmerTest)})
d <- read.csv("data.csv", stringsAsFactors = FALSE)
d$participant <- factor(d$participant)
d$puzzle <- factor(d$puzzle)
models <- read.csv("models.csv", stringsAsFactors = FALSE)
fixed <- list(); vc <- list()
ctrl <- lmerControl(optimizer = "bobyqa", optCtrl = list(rhobeg = 0.2, rhoend = 2e-10, maxfun = 1e5))
for (i in seq_len(nrow(models))) {
  f <- as.formula(paste(models$y[i], "~", models$rhs[i], "+ (1|participant) + (1|puzzle)"))
  dd <- d[complete.cases(d[, all.vars(f)]), ]
  msgs <- character(0)
  m <- withCallingHandlers(
    lmer(f, data = dd, REML = TRUE, control = ctrl),
    warning = function(w) { msgs <<- c(msgs, conditionMessage(w)); invokeRestart("muffleWarning") },
    message = function(w) { msgs <<- c(msgs, conditionMessage(w)); invokeRestart("muffleMessage") })
  s <- summary(m, ddf = "Satterthwaite")$coefficients
  fixed[[i]] <- data.frame(model = models$name[i], term = rownames(s), estimate = s[, 1],
                           se = s[, 2], df = s[, 3], p = s[, 5])
  v <- as.data.frame(VarCorr(m))
  get <- function(g) v$vcov[v$grp == g]
  vc[[i]] <- data.frame(model = models$name[i], var_participant = get("participant"),
                        var_puzzle = get("puzzle"), var_residual = get("Residual"),
                        reml_loglik = as.numeric(logLik(m, REML = TRUE)),
                        messages = paste(msgs, collapse = "; "))
}
write.csv(do.call(rbind, fixed), "fixed.csv", row.names = FALSE)
write.csv(do.call(rbind, vc), "vc.csv", row.names = FALSE)
"""


def lmer_crossed(
    data: pd.DataFrame,
    models: Sequence[tuple[str, str, str]],
    workdir: str | os.PathLike,
    participant: str = "participant_id",
    puzzle: str = "puzzle_hash",
) -> dict[str, LmerResult]:
    """Fit ``lmer(y ~ rhs + (1|participant) + (1|puzzle), REML = TRUE)`` for each model.

    ``models``: ``(name, y, rhs)`` triples over columns of ``data`` (one CSV, one R session).
    bobyqa runs with tight tolerances so that the reference optimum is precise to well below
    the comparison tolerance. Satterthwaite df and p from lmerTest. Returns ``{name: result}``.
    """
    wd = Path(workdir)
    wd.mkdir(parents=True, exist_ok=True)
    d = data.rename(columns={participant: "participant", puzzle: "puzzle"})
    d["participant"] = d["participant"].astype(str)
    d["puzzle"] = d["puzzle"].astype(str)
    d.to_csv(wd / "data.csv", index=False, float_format="%.17g")
    pd.DataFrame(models, columns=["name", "y", "rhs"]).to_csv(wd / "models.csv", index=False)
    run_r(_LMER_CODE, wd)
    fixed = pd.read_csv(wd / "fixed.csv")
    vc = pd.read_csv(wd / "vc.csv", keep_default_na=False)
    fixed["term"] = fixed["term"].replace({"(Intercept)": "Intercept"})
    out = {}
    for _, r in vc.iterrows():
        f = fixed[fixed["model"] == r["model"]].set_index("term")[["estimate", "se", "df", "p"]]
        out[str(r["model"])] = LmerResult(
            fixed=f,
            var_participant=float(r["var_participant"]),
            var_puzzle=float(r["var_puzzle"]),
            var_residual=float(r["var_residual"]),
            reml_loglik=float(r["reml_loglik"]),
            messages=str(r["messages"]),
        )
    return out


_BTM_CODE = r"""
suppressMessages(library(BradleyTerry2))
d <- read.csv("pairs.csv", stringsAsFactors = FALSE)
lev <- readLines("items.txt")
d$player1 <- factor(d$player1, levels = lev)
d$player2 <- factor(d$player2, levels = lev)
m <- suppressWarnings(BTm(cbind(win1, win2), player1, player2, data = d,
                          control = glm.control(epsilon = 1e-14, maxit = 200)))
a <- BTabilities(m)
write.csv(data.frame(item = rownames(a), ability = a[, "ability"]), "abilities.csv",
          row.names = FALSE)
"""


def btm_log_strengths(
    comparisons: pd.DataFrame, items: Sequence, workdir: str | os.PathLike
) -> np.ndarray:
    """Return BradleyTerry2's ML log-abilities in ``items`` order, centred to mean 0.

    ``comparisons``: :func:`nonolab.stats.ranking.pairwise_comparisons` format (``winner``, ``loser``,
    ``weight``; a tie is two half-weight rows). Aggregated to one binomial row per unordered
    pair (fractional win counts for ties), fitted by ``BTm`` (glm, tight convergence).
    """
    wd = Path(workdir)
    wd.mkdir(parents=True, exist_ok=True)
    labels = [str(i) for i in items]
    pos = {k: i for i, k in enumerate(labels)}
    agg: dict[tuple[str, str], list[float]] = {}
    for w, lo, wt in zip(
        comparisons["winner"].astype(str),
        comparisons["loser"].astype(str),
        comparisons["weight"],
        strict=True,
    ):
        a, b = sorted((w, lo), key=pos.__getitem__)
        cell = agg.setdefault((a, b), [0.0, 0.0])
        cell[0 if w == a else 1] += float(wt)
    pairs = pd.DataFrame(
        [(a, b, x, y) for (a, b), (x, y) in agg.items()],
        columns=["player1", "player2", "win1", "win2"],
    )
    pairs.to_csv(wd / "pairs.csv", index=False, float_format="%.17g")
    (wd / "items.txt").write_text("\n".join(labels) + "\n", encoding="utf-8")
    run_r(_BTM_CODE, wd)
    ab = pd.read_csv(wd / "abilities.csv", dtype={"item": str}).set_index("item")["ability"]
    theta = ab.reindex(labels).to_numpy(dtype=float)
    return theta - theta.mean()


@dataclass(frozen=True)
class ClmmResult:
    """One ``ordinal::clmm`` fit: ``coef`` (thresholds then fixed effects; index as clmm names
    them, ``"1|2"`` ...; ``estimate``; ``se`` from clmm's own finite-difference Hessian;
    ``se_richardson`` from the Hessian of clmm's Laplace likelihood by numDeriv's Richardson
    extrapolation), random-effect SDs (logit units) by grouping column, and the Laplace
    log-likelihood."""

    coef: pd.DataFrame
    sd: dict[str, float]
    loglik: float


_CLMM_CODE = r"""
suppressMessages(library(ordinal))
d <- read.csv("data.csv", stringsAsFactors = FALSE)
models <- read.csv("models.csv", stringsAsFactors = FALSE)
groups <- readLines("groups.txt")
for (g in groups) d[[g]] <- factor(d[[g]])
re <- paste(sprintf("(1|%s)", groups), collapse = " + ")
ctrl <- clmm.control(gradTol = 1e-10, rel.tol = 1e-13, eval.max = 1e4, iter.max = 1e4)
coefs <- list(); sds <- list()
for (i in seq_len(nrow(models))) {
  f <- as.formula(paste("factor(", models$y[i], ") ~", models$rhs[i], "+", re))
  m <- clmm(f, data = d, link = "logit", control = ctrl)
  s <- coef(summary(m))
  # clmm's own likelihood, differentiated by Richardson extrapolation (numDeriv)
  rho <- clmm(f, data = d, link = "logit", control = ctrl, doFit = FALSE)
  se_rich <- tryCatch({
    h <- numDeriv::hessian(function(p) ordinal:::getNLA(rho, p), m$optRes$par)
    sqrt(diag(solve(h)))[seq_len(nrow(s))]
  }, error = function(e) rep(NA_real_, nrow(s)))
  coefs[[i]] <- data.frame(model = models$name[i], term = rownames(s), estimate = s[, 1],
                           se = s[, 2], se_richardson = se_rich)
  sds[[i]] <- data.frame(model = models$name[i], group = names(m$ST),
                         sd = as.numeric(unlist(m$ST)), loglik = as.numeric(logLik(m)))
}
write.csv(do.call(rbind, coefs), "coef.csv", row.names = FALSE)
write.csv(do.call(rbind, sds), "sd.csv", row.names = FALSE)
"""


def clmm_crossed(
    data: pd.DataFrame,
    models: Sequence[tuple[str, str, str]],
    workdir: str | os.PathLike,
    groups: Sequence[str] = ("participant_id", "puzzle_hash"),
) -> dict[str, ClmmResult]:
    """Fit ``ordinal::clmm(factor(y) ~ rhs + (1|g) ..., link = "logit")`` (Laplace, flexible
    thresholds) for each ``(name, y, rhs)`` in ``models``; return ``{name: result}``.

    The inner (random-effect mode) and outer (nlminb) tolerances are tightened so that the
    reference optimum is precise well below the comparison tolerances.
    """
    wd = Path(workdir)
    wd.mkdir(parents=True, exist_ok=True)
    d = data.copy()
    for g in groups:
        d[g] = d[g].astype(str)
    d.to_csv(wd / "data.csv", index=False, float_format="%.17g")
    pd.DataFrame(models, columns=["name", "y", "rhs"]).to_csv(wd / "models.csv", index=False)
    (wd / "groups.txt").write_text("\n".join(groups) + "\n", encoding="utf-8")
    run_r(_CLMM_CODE, wd)
    coef = pd.read_csv(wd / "coef.csv")
    sds = pd.read_csv(wd / "sd.csv")
    out = {}
    for name, part in sds.groupby("model", sort=False):
        c = coef[coef["model"] == name].set_index("term")[["estimate", "se", "se_richardson"]]
        out[str(name)] = ClmmResult(
            coef=c,
            sd=dict(zip(part["group"], part["sd"].astype(float), strict=True)),
            loglik=float(part["loglik"].iloc[0]),
        )
    return out
