# sdcMicro's side of benchmarks/categorical.py (run by it with Rscript; never part of probanon).
#
# usage: Rscript _sdcmicro_categorical.R RLIB MODE IN.csv OUT.json [name=value ...]
#   RLIB   the R library holding sdcMicro (setup.sh's PREFIX/Rlib), "" for R's default
#   MODE   localsupp | pram | suda2 | risk
#   IN.csv the records (header; empty fields are missing); key columns are read as factors (sdcMicro's
#          freqCalc turns character keys into NA with only a warning) and their names have '-' replaced
#          by '_' (hyphenated key names break sdcMicro's risk functions when a key has missing values)
#   OUT.json the figures, one JSON object; the time of the sdcMicro call alone is "seconds" (reading
#          and writing files excluded)
# options (name=value):
#   keys=a,b,c   key columns (names as in IN.csv)
#   k=3          localsupp: k; combs=m: k-anonymity for every combination of m keys (sdcMicro's combs,
#                run as combs = m:1 so that every subset of at most m keys is targeted)
#   out_csv=F    localsupp/pram: write the keys after the method (NA as an empty field) to F
#   count=1      localsupp: also count the records with fk < k as sdcMicro counts (freqCalc, alpha = 1:
#                a missing value matches any value) over all keys, or over every combination when combs
#   pd=0.8 alpha=0.5 seed=1   pram: sdcMicro's defaults; seed for set.seed
#   w=COL hid=COL risk: weight and household-id columns (measure_risk(..., w, hid), fast_hier = TRUE)
#   DisFraction=0.01 suda2
args <- commandArgs(trailingOnly = TRUE)
if (length(args) < 4) stop("usage: _sdcmicro_categorical.R RLIB MODE IN.csv OUT.json [name=value ...]")
rlib <- args[1]; mode <- args[2]; infile <- args[3]; outfile <- args[4]
opt <- list()
for (a in args[-(1:4)]) {
  kv <- strsplit(a, "=", fixed = TRUE)[[1]]
  opt[[kv[1]]] <- paste(kv[-1], collapse = "=")
}
if (nzchar(rlib)) .libPaths(c(rlib, .libPaths()))
suppressPackageStartupMessages({
  library(sdcMicro)
  library(data.table)
  library(jsonlite)
})

clean <- function(x) gsub("-", "_", x, fixed = TRUE)
keys_raw <- strsplit(opt$keys, ",", fixed = TRUE)[[1]]
keys <- clean(keys_raw)
t_read <- proc.time()[["elapsed"]]
dt <- fread(infile, na.strings = c("", "NA"), colClasses = setNames(rep("character", length(keys_raw)), keys_raw))
setnames(dt, clean(names(dt)))
for (v in keys) set(dt, j = v, value = factor(dt[[v]]))
df <- as.data.frame(dt)
t_read <- proc.time()[["elapsed"]] - t_read
out <- list(mode = mode, n = nrow(df), keys = keys, read_seconds = t_read,
            sdcmicro = as.character(packageVersion("sdcMicro")), R = paste(R.version$major, R.version$minor, sep = "."))

elapsed <- function(expr) {
  gc()
  t0 <- proc.time()[["elapsed"]]
  value <- force(expr)
  list(value = value, seconds = proc.time()[["elapsed"]] - t0)
}

count_violations <- function(x, keys, k, combs) {
  # records with fk < k as sdcMicro counts them (freqCalc, alpha = 1), over all keys or every
  # combination of at most combs keys (a record counted once per combination it violates)
  sets <- if (is.null(combs)) list(keys) else unlist(lapply(seq_len(combs), function(m) {
    cm <- utils::combn(keys, m); lapply(seq_len(ncol(cm)), function(j) cm[, j])
  }), recursive = FALSE)
  below <- rep(FALSE, nrow(x))
  per <- integer(0)
  for (s in sets) {
    fk <- freqCalc(x, keyVars = s, alpha = 1)$fk
    b <- fk < k
    per <- c(per, sum(b))
    below <- below | b
  }
  list(records = sum(below), sets = length(sets), combinations_violated = sum(per > 0))
}

write_keys <- function(x, keys, file) {
  fwrite(x[, keys, drop = FALSE], file, na = "")
}

if (mode == "localsupp") {
  k <- as.integer(if (is.null(opt$k)) 3 else opt$k)
  combs <- if (is.null(opt$combs)) NULL else as.integer(opt$combs)
  na_before <- sapply(df[, keys, drop = FALSE], function(v) sum(is.na(v)))
  r <- elapsed(if (is.null(combs)) {
    localSuppression(df, k = k, keyVars = keys)
  } else {
    localSuppression(df, k = k, keyVars = keys, combs = combs:1)
  })
  ls <- r$value
  x <- ls$xAnon
  out$seconds <- r$seconds
  out$k <- k
  out$combs <- if (is.null(combs)) NULL else combs
  supps <- sapply(x[, keys, drop = FALSE], function(v) sum(is.na(v))) - na_before
  out$suppressed <- as.list(supps)
  out$total <- sum(supps)
  if (!is.null(opt$count) && opt$count == "1") {
    cv <- elapsed(count_violations(x, keys, k, combs))
    out$violations_after <- cv$value$records
    out$violated_combinations <- cv$value$combinations_violated
    out$count_seconds <- cv$seconds
  }
  if (!is.null(opt$out_csv)) write_keys(x, keys, opt$out_csv)
} else if (mode == "pram") {
  set.seed(as.integer(if (is.null(opt$seed)) 1 else opt$seed))
  pd <- as.numeric(if (is.null(opt$pd)) 0.8 else opt$pd)
  alpha <- as.numeric(if (is.null(opt$alpha)) 0.5 else opt$alpha)
  r <- elapsed(pram(df[, keys, drop = FALSE], variables = keys, pd = pd, alpha = alpha))
  out$seconds <- r$seconds
  s <- attr(r$value, "summary")
  out$changed <- as.list(setNames(s$nrChanges, s$variable))
  out$changed_records <- sum(Reduce(`|`, lapply(keys, function(v) {
    a <- as.character(r$value[[v]]); b <- as.character(r$value[[paste0(v, "_pram")]])
    (is.na(a) != is.na(b)) | (!is.na(a) & !is.na(b) & a != b)
  })))
  if (!is.null(opt$out_csv)) {
    y <- as.data.frame(setNames(lapply(keys, function(v) r$value[[paste0(v, "_pram")]]), keys))
    write_keys(y, keys, opt$out_csv)
  }
} else if (mode == "suda2") {
  dis <- as.numeric(if (is.null(opt$DisFraction)) 0.01 else opt$DisFraction)
  r <- elapsed(suda2(df, variables = keys, DisFraction = dis))
  s <- r$value
  out$seconds <- r$seconds
  out$records_with_msu <- sum(s$score > 0)
  out$score_sum <- sum(s$score)
  out$score_max <- max(s$score)
  out$dis_mean <- mean(s$disScore)
  out$dis_max <- max(s$disScore)
  out$contributions <- as.list(setNames(s$attribute_contributions$contribution, s$attribute_contributions$variable))
  if (!is.null(opt$out_csv)) fwrite(data.table(score = s$score, dis = s$disScore), opt$out_csv)
} else if (mode == "risk") {
  w <- if (is.null(opt$w)) NULL else clean(opt$w)
  hid <- if (is.null(opt$hid)) NULL else clean(opt$hid)
  r <- elapsed(measure_risk(df, keyVars = keys, w = w, hid = hid))
  m <- r$value
  out$seconds <- r$seconds
  out$global_risk_ER <- m$global_risk_ER
  out$global_risk_pct <- m$global_risk_pct
  out$global_threshold <- if (is.null(m$global_threshold) || is.na(m$global_threshold)) NULL else m$global_threshold
  if (!is.null(hid)) {
    out$hier_risk_ER <- m$hier_risk_ER
    out$hier_risk_pct <- m$hier_risk_pct
  }
  if (!is.null(opt$out_csv)) {
    res <- as.data.table(m$Res)
    fwrite(res, opt$out_csv)
  }
} else {
  stop("unknown mode ", mode)
}
writeLines(toJSON(out, auto_unbox = TRUE, digits = NA, null = "null"), outfile)
