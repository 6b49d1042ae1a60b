/* Two or more packages of one model timed against each other in one process (docs/performance.md,
 * "Measuring on a noisy host"):
 *
 *   ab_bench PKG_A PKG_B [PKG_C ...] --input NAME=FILE.npy [--threads T] [--blocks B] [--runs R]
 *            [--launches PCT]
 *
 * On a shared virtual machine the speed of the host moves by 10-80% over seconds (at 2 threads,
 * with where it places the two vCPUs), so two packages timed one after the other in separate
 * runs of kiln-run compare two states of the host more than two packages. Here the packages run
 * in blocks, in turn (A's block, B's block, ..., B blocks each, default 40), each block R runs
 * (default 5) after one untimed run; a block's time is its fastest run. Each later package's
 * ratio to A is taken per block pair, so a change of host speed between pairs cancels; the
 * median ratio and the share of pairs where it beat A are printed, with each package's median
 * block time. The packages' outputs are compared (largest difference relative to A's largest
 * value): a variant that computes something else is not a faster one.
 * --launches PCT compares launch by launch as well, for packages with the same launches (a change
 * of tiles or task splits, not of fusion): the sessions time every launch (kiln-run --profile's
 * clock reads, one pool job per launch), each launch's block time is its mean over the block's
 * runs, and a launch whose median ratio over block pairs is PCT percent or more away from 1 is
 * printed with its label, unless it takes under 0.5% of the first package's launch time (a
 * launch of a few microseconds moves by 20% from block to block). Two packages timed by alternating
 * runs of kiln-run --profile compare the host's state as much as the launches (the second of a pair
 * ran 5-10% slower throughout on 2026-12-05); in blocks the drift cancels here too. A benchmark,
 * not a test: it checks only that every run succeeds. */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kiln/kiln.h"
#include "npy.h"
#include "timing.h"

#define MAX_PACKAGES 8
#define MAX_INPUTS 8

static double median(double* v, int n) {
  qsort(v, (size_t)n, sizeof(double), cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The median over blocks of package p's mean for launch l (launch_ms: [package][block][launch]);
 * `column` has room for `blocks` values. */
static double launch_median(const double* launch_ms, int p, int blocks, size_t n_launch, size_t l,
                            double* column) {
  for (int b = 0; b < blocks; ++b)
    column[b] = launch_ms[((size_t)p * (size_t)blocks + (size_t)b) * n_launch + l];
  return median(column, blocks);
}

static int failed(kiln_status s, const char* what, const char* package) {
  if (s == KILN_OK) return 0;
  fprintf(stderr, "ab_bench: %s: %s: %s\n", package, what, kiln_last_error_message());
  return 1;
}

/* The largest |a - b| over float32 outputs, relative to the largest |a|; -1 for other dtypes. */
static double output_difference(const kiln_session* a, const kiln_session* b, size_t index,
                                kiln_dtype dtype) {
  const void *da, *db;
  size_t na, nb;
  if (kiln_session_output(a, index, &da, &na) || kiln_session_output(b, index, &db, &nb) ||
      na != nb)
    return INFINITY;
  if (dtype != KILN_DTYPE_FLOAT32) return memcmp(da, db, na) ? INFINITY : 0;
  const float *fa = da, *fb = db;
  double diff = 0, scale = 0;
  for (size_t i = 0; i < na / sizeof(float); ++i) {
    diff = fmax(diff, fabs((double)fa[i] - (double)fb[i]));
    scale = fmax(scale, fabs((double)fa[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

int main(int argc, char** argv) {
  const char* packages[MAX_PACKAGES];
  const char* in_spec[MAX_INPUTS];
  int n_pkg = 0, n_in = 0, threads = 1, blocks = 40, runs = 5;
  double launch_pct = -1; /* --launches: print launches this far from a ratio of 1, in percent */
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    if (!strcmp(a, "--input") && i + 1 < argc && n_in < MAX_INPUTS) {
      in_spec[n_in++] = argv[++i];
    } else if (!strcmp(a, "--threads") && i + 1 < argc) {
      threads = atoi(argv[++i]);
    } else if (!strcmp(a, "--blocks") && i + 1 < argc) {
      blocks = atoi(argv[++i]);
    } else if (!strcmp(a, "--runs") && i + 1 < argc) {
      runs = atoi(argv[++i]);
    } else if (!strcmp(a, "--launches") && i + 1 < argc) {
      launch_pct = atof(argv[++i]);
      if (launch_pct < 0) launch_pct = 0;
    } else if (a[0] != '-' && n_pkg < MAX_PACKAGES) {
      packages[n_pkg++] = a;
    } else {
      fprintf(stderr,
              "usage: ab_bench PKG_A PKG_B [PKG ...] --input NAME=FILE.npy [--threads T] "
              "[--blocks B] [--runs R] [--launches PCT]\n");
      return 2;
    }
  }
  if (n_pkg < 2 || threads < 1 || blocks < 1 || runs < 1) {
    fprintf(stderr, "ab_bench: two or more packages, and positive --threads, --blocks, --runs\n");
    return 2;
  }
  npy_array arrays[MAX_INPUTS];
  for (int i = 0; i < n_in; ++i) {
    const char* eq = strchr(in_spec[i], '=');
    char err[512];
    if (!eq || npy_read(eq + 1, &arrays[i], err, sizeof err)) {
      fprintf(stderr, "ab_bench: --input %s: %s\n", in_spec[i], eq ? err : "wants NAME=FILE.npy");
      return 2;
    }
  }
  kiln_model* models[MAX_PACKAGES] = {0};
  kiln_session* sessions[MAX_PACKAGES] = {0};
  double* block_ms = calloc((size_t)(n_pkg * blocks), sizeof(double));
  double* ratios = calloc((size_t)blocks, sizeof(double));
  size_t n_launch = 0;
  double* launch_ms = NULL;    /* [package][block][launch]: the launch's mean over the block */
  double* launch_total = NULL; /* [package][launch]: the profile's total before the block */
  uint64_t* launch_runs = NULL;
  int rc = 1;
  if (!block_ms || !ratios) goto out;
  for (int p = 0; p < n_pkg; ++p) {
    kiln_model_options mo;
    kiln_model_options_init(&mo);
    kiln_session_options so;
    kiln_session_options_init(&so);
    so.num_threads = (size_t)threads;
    so.profile = launch_pct >= 0;
    if (failed(kiln_model_load_file(packages[p], &mo, &models[p]), "loading", packages[p]) ||
        failed(kiln_session_create(models[p], &so, &sessions[p]), "creating a session",
               packages[p]))
      goto out;
    for (int i = 0; i < n_in; ++i) {
      size_t idx;
      char name[256];
      size_t len = (size_t)(strchr(in_spec[i], '=') - in_spec[i]);
      snprintf(name, sizeof name, "%.*s", (int)len, in_spec[i]);
      if (failed(kiln_model_find_input(models[p], name, &idx), "--input", packages[p]) ||
          failed(kiln_session_set_input(sessions[p], idx, arrays[i].dtype, arrays[i].data,
                                        arrays[i].size_bytes),
                 "--input", packages[p]))
        goto out;
    }
  }
  if (launch_pct >= 0) {
    for (int p = 0; p < n_pkg; ++p) {
      size_t n;
      kiln_model_launch_count(models[p], &n);
      if (p > 0 && n != n_launch) {
        fprintf(stderr, "ab_bench: --launches: %s has %zu launches, %s %zu\n", packages[p], n,
                packages[0], n_launch);
        goto out;
      }
      n_launch = n;
    }
    launch_ms = calloc((size_t)n_pkg * (size_t)blocks * n_launch + 1, sizeof(double));
    launch_total = calloc((size_t)n_pkg * n_launch + 1, sizeof(double));
    launch_runs = calloc((size_t)n_pkg * n_launch + 1, sizeof(uint64_t));
    if (!launch_ms || !launch_total || !launch_runs) goto out;
  }
  for (int b = 0; b < blocks; ++b)
    for (int p = 0; p < n_pkg; ++p) {
      double best = INFINITY;
      for (int r = 0; r <= runs; ++r) {
        double s = now_ms();
        if (failed(kiln_session_run(sessions[p]), "running", packages[p])) goto out;
        if (r > 0) best = fmin(best, now_ms() - s);  // the first run of a block is untimed
      }
      block_ms[p * blocks + b] = best;
      for (size_t l = 0; l < n_launch; ++l) {
        size_t kernel;
        uint64_t n_runs;
        double total;
        if (failed(kiln_session_launch_profile(sessions[p], l, &kernel, &n_runs, &total),
                   "reading the profile", packages[p]))
          goto out;
        size_t at = (size_t)p * n_launch + l;
        uint64_t ran = n_runs - launch_runs[at];
        launch_ms[((size_t)p * (size_t)blocks + (size_t)b) * n_launch + l] =
            ran ? (total - launch_total[at]) / (double)ran : 0;
        launch_total[at] = total;
        launch_runs[at] = n_runs;
      }
    }
  printf("threads: %d, %d blocks of %d runs (median of block minima)\n", threads, blocks, runs);
  for (int p = 0; p < n_pkg; ++p) {
    double med_ms;
    double* own = malloc((size_t)blocks * sizeof(double));
    if (!own) goto out;
    memcpy(own, &block_ms[p * blocks], (size_t)blocks * sizeof(double));
    med_ms = median(own, blocks);
    free(own);
    printf("%s: %.4f ms", packages[p], med_ms);
    if (p > 0) {
      int wins = 0;
      for (int b = 0; b < blocks; ++b) {
        ratios[b] = block_ms[p * blocks + b] / block_ms[b];
        wins += ratios[b] < 1;
      }
      size_t n_out;
      double worst = 0;
      kiln_model_output_count(models[0], &n_out);
      for (size_t o = 0; o < n_out; ++o) {
        kiln_tensor_info t;
        t.struct_size = sizeof t;
        kiln_model_output_info(models[0], o, &t);
        worst = fmax(worst, output_difference(sessions[0], sessions[p], o, t.dtype));
      }
      printf("  ratio to %s: %.3f (faster in %d of %d pairs), outputs differ by %.2g", packages[0],
             median(ratios, blocks), wins, blocks, worst);
    }
    printf("\n");
  }
  /* Launch by launch: each later package against the first, per block pair. */
  if (n_launch > 0) {
    double* first_ms = malloc(n_launch * sizeof(double)); /* the first package's, per launch */
    double* column = malloc((size_t)blocks * sizeof(double));
    if (!first_ms || !column) {
      free(first_ms);
      free(column);
      goto out;
    }
    double first_sum = 0;
    for (size_t l = 0; l < n_launch; ++l) {
      first_ms[l] = launch_median(launch_ms, 0, blocks, n_launch, l, column);
      first_sum += first_ms[l];
    }
    for (int p = 1; p < n_pkg; ++p) {
      double sum_p = 0;
      int shown = 0;
      for (size_t l = 0; l < n_launch; ++l) {
        for (int b = 0; b < blocks; ++b) {
          double a = launch_ms[(size_t)b * n_launch + l];
          ratios[b] =
              a > 0 ? launch_ms[((size_t)p * (size_t)blocks + (size_t)b) * n_launch + l] / a : 1;
        }
        double r = median(ratios, blocks),
               mp = launch_median(launch_ms, p, blocks, n_launch, l, column);
        sum_p += mp;
        if (fabs(r - 1) * 100 < launch_pct || first_ms[l] < 0.005 * first_sum) continue;
        kiln_launch_info info;
        info.struct_size = sizeof info;
        kiln_model_launch_info(models[p], l, &info);
        if (!shown++)
          printf("launches of %s against %s (median block means, ms):\n", packages[p], packages[0]);
        printf("  %4zu %8.4f -> %8.4f  ratio %.3f  %.70s\n", l, first_ms[l], mp, r,
               info.label ? info.label : "");
      }
      printf(
          "launch sum of %s: %.4f -> %.4f ms (%zu launches, %d of 0.5%% or more of it listed: "
          "%.1f%% "
          "or more from 1)\n",
          packages[p], first_sum, sum_p, n_launch, shown, launch_pct);
    }
    free(first_ms);
    free(column);
  }
  rc = 0;
out:
  for (int p = 0; p < n_pkg; ++p) {
    if (sessions[p]) kiln_session_release(sessions[p]);
    if (models[p]) kiln_model_release(models[p]);
  }
  for (int i = 0; i < n_in; ++i) npy_free(&arrays[i]);
  free(block_ms);
  free(ratios);
  free(launch_ms);
  free(launch_total);
  free(launch_runs);
  return rc;
}
