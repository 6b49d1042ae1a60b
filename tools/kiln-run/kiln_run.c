/* kiln-run: runs a kiln package with the C runtime only (links libkiln_rt, nothing else).
 * `kiln-run --help` lists the options.
 *
 * --trust NAME.pub (repeatable; kilnc keygen writes the file) loads only a package signed by one
 * of the keys, unchanged since signing (kilnc compile --sign NAME.key).
 * Outputs are written as DIR/NAME.npy (characters outside [A-Za-z0-9._-] become '_').
 * --repeat N runs N timed inferences after a warm-up and prints "latency_ms: min=X median=Y" and
 * "ready_ms: Z" (package load plus session creation).
 * --info prints the load time, the kernel variants (the one loaded marked), the model's tensors
 * and launches, and runs nothing. --variant CPU loads that variant instead of the best one.
 * --trace FILE.json writes the last run as a Chrome trace (trace.c).
 * --selftest runs the package's embedded self-test (kilnc --embed-selftest), prints the error of
 * every output and "selftest: passed" (exit 0) or "selftest: FAILED" (exit 1).
 * Any error prints the runtime's message and exits with status 1 (2 for usage errors). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "kiln/kiln.h"
#include "npy.h"
#include "timing.h"
#include "trace.h"

#define MAX_INPUTS 256
#define MAX_KEYS 16

static void usage(FILE* f) {
  fprintf(f,
          "usage: kiln-run PACKAGE --input NAME=FILE.npy ... [options]\n"
          "       kiln-run PACKAGE --info\n"
          "       kiln-run PACKAGE --selftest [--threads N] [--trust NAME.pub ...]\n\n"
          "options:\n"
          "  --input NAME=FILE.npy  a value for input NAME (repeatable; every input needs one)\n"
          "  --output-dir DIR       write each output as DIR/NAME.npy\n"
          "  --threads N            threads running the kernels, this one included (default 1)\n"
          "  --repeat N             time N runs after a warm-up: latency_ms min and median\n"
          "  --profile              per-launch times, GFLOP/s and the model nodes computed\n"
          "                         (launches of a group then run one at a time)\n"
          "  --peak GFLOPS          with --profile: each launch's share of this FMA peak per core\n"
          "                         times the threads (tools/bench/fma_peak measures it)\n"
          "  --trace FILE.json      the last run as a Chrome trace (Perfetto, chrome://tracing)\n"
          "  --info                 print the load time, tensors and launches; run nothing\n"
          "  --selftest             run the package's embedded self-test\n"
          "  --trust NAME.pub       load only packages signed by this key (repeatable)\n"
          "  --variant CPU          run the package's kernel variant for CPU (kilnc --cpu A,B,..)\n"
          "                         instead of the last one this CPU can run\n"
          "  --version              print the version and the package format this runtime reads\n"
          "  -h, --help             print this text\n");
}

/* A public key file ("kiln-ed25519-public-key" and 64 hex digits). 0 on success. */
static int read_public_key(const char* path, uint8_t key[32]) {
  static const char tag[] = "kiln-ed25519-public-key ";
  char text[256] = "";
  FILE* f = fopen(path, "r");
  if (!f) {
    fprintf(stderr, "kiln-run: --trust: cannot open '%s': %s\n", path, strerror(errno));
    return 1;
  }
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = 0;
  if (strncmp(text, tag, sizeof tag - 1) != 0) goto bad;
  for (int i = 0; i < 32; ++i) {
    unsigned byte;
    if (sscanf(text + sizeof tag - 1 + 2 * i, "%2x", &byte) != 1) goto bad;
    key[i] = (uint8_t)byte;
  }
  return 0;
bad:
  fprintf(stderr,
          "kiln-run: --trust: '%s' is not a kiln public key file (kilnc keygen writes one)\n",
          path);
  return 1;
}

static int check(kiln_status s, const char* what) {
  if (s == KILN_OK) return 0;
  fprintf(stderr, "kiln-run: %s: %s: %s\n", what, kiln_status_name(s), kiln_last_error_message());
  return 1;
}

static void print_info(const kiln_model* m) {
  size_t n, arena, align, kernels;
  kiln_model_arena_requirements(m, &arena, &align);
  kiln_model_kernel_count(m, &kernels);
  kiln_model_variant_count(m, &n);
  for (size_t i = 0; i < n; ++i) {
    kiln_variant_info vi;
    vi.struct_size = sizeof vi;
    kiln_model_variant_info(m, i, &vi);
    printf("variant %zu of %zu: %s%s%s\n", i + 1, n, vi.cpu,
           vi.runs_here ? "" : " (not on this CPU)", vi.chosen ? " (loaded)" : "");
  }
  printf("arena: %zu bytes (alignment %zu), kernels: %zu\n", arena, align, kernels);
  size_t nsym = 0;
  kiln_model_symbol_count(m, &nsym);
  for (size_t k = 0; k < nsym; ++k) {
    const char* name;
    int64_t lo, hi;
    kiln_model_symbol_info(m, k, &name, &lo, &hi);
    printf("symbol %zu: %s in [%lld, %lld]\n", k, name, (long long)lo, (long long)hi);
  }
  for (int out = 0; out < 2; ++out) {
    (out ? kiln_model_output_count : kiln_model_input_count)(m, &n);
    for (size_t i = 0; i < n; ++i) {
      kiln_tensor_info t;
      t.struct_size = sizeof t;
      (out ? kiln_model_output_info : kiln_model_input_info)(m, i, &t);
      printf("%s %zu: %s %s [", out ? "output" : "input", i, t.name, kiln_dtype_name(t.dtype));
      for (size_t k = 0; k < t.rank; ++k) {
        int sym = t.axis_symbols ? t.axis_symbols[k] : -1;
        const char* name = NULL;
        int64_t lo, hi;
        if (sym >= 0) kiln_model_symbol_info(m, (size_t)sym, &name, &lo, &hi);
        if (name)
          printf("%s%s<=%lld", k ? "," : "", name, (long long)t.shape[k]);
        else
          printf("%s%lld", k ? "," : "", (long long)t.shape[k]);
      }
      printf("] %zu bytes%s\n", t.size_bytes, nsym ? " (at the bounds)" : "");
    }
  }
  kiln_model_launch_count(m, &n);
  printf("launches: %zu\n", n);
  for (size_t l = 0; l < n; ++l) {
    kiln_launch_info li;
    li.struct_size = sizeof li;
    const char* kernel = "?";
    kiln_model_launch_info(m, l, &li);
    kiln_model_kernel_name(m, li.kernel, &kernel);
    printf("launch %zu: group %zu, %s x %zu tasks: %s\n", l, li.group, kernel, li.num_tasks,
           li.label);
  }
}

/* "[1,3,224,224]" into |buf|. */
static const char* dims_text(size_t rank, const int64_t* shape, char* buf, size_t size) {
  size_t n = (size_t)snprintf(buf, size, "[");
  for (size_t k = 0; k < rank && n < size; ++k)
    n += (size_t)snprintf(buf + n, size - n, "%s%lld", k ? "," : "", (long long)shape[k]);
  if (n < size) snprintf(buf + n, size - n, "]");
  return buf;
}

int main(int argc, char** argv) {
  const char* package = NULL;
  const char* out_dir = NULL;
  const char* in_name[MAX_INPUTS];
  const char* in_file[MAX_INPUTS];
  const char* trace_file = NULL;
  const char* variant = NULL;
  double peak = 0;
  int n_in = 0, threads = 1, repeat = 0, profile = 0, info = 0, selftest = 0;
  uint8_t keys[MAX_KEYS][32];
  size_t n_keys = 0;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* v = NULL;
#define VALUE(flag)                                                   \
  (strncmp(a, flag "=", strlen(flag) + 1) == 0 ? a + strlen(flag) + 1 \
   : (strcmp(a, flag) == 0 && i + 1 < argc)    ? argv[++i]            \
                                               : NULL)
    if (!strncmp(a, "--input", 7) && (v = VALUE("--input"))) {
      const char* eq = strchr(v, '=');
      if (!eq || eq == v || n_in >= MAX_INPUTS) {
        fprintf(stderr, "kiln-run: --input wants NAME=FILE.npy, got '%s'\n", v);
        return 2;
      }
      char* name = strndup(v, (size_t)(eq - v));
      in_name[n_in] = name;
      in_file[n_in++] = eq + 1;
    } else if (!strncmp(a, "--output-dir", 12) && (v = VALUE("--output-dir"))) {
      out_dir = v;
    } else if (!strncmp(a, "--threads", 9) && (v = VALUE("--threads"))) {
      threads = atoi(v);
      if (threads < 1) {
        fprintf(stderr, "kiln-run: --threads wants a positive number\n");
        return 2;
      }
    } else if (!strncmp(a, "--repeat", 8) && (v = VALUE("--repeat"))) {
      repeat = atoi(v);
      if (repeat < 1) {
        fprintf(stderr, "kiln-run: --repeat wants a positive number\n");
        return 2;
      }
    } else if (!strncmp(a, "--trust", 7) && (v = VALUE("--trust"))) {
      if (n_keys >= MAX_KEYS) {
        fprintf(stderr, "kiln-run: at most %d --trust keys\n", MAX_KEYS);
        return 2;
      }
      if (read_public_key(v, keys[n_keys++])) return 2;
    } else if (!strncmp(a, "--peak", 6) && (v = VALUE("--peak"))) {
      peak = atof(v);
      if (peak <= 0) {
        fprintf(stderr,
                "kiln-run: --peak wants GFLOP/s per core (tools/bench/fma_peak measures it)\n");
        return 2;
      }
    } else if (!strncmp(a, "--variant", 9) && (v = VALUE("--variant"))) {
      variant = v;
    } else if (!strncmp(a, "--trace", 7) && (v = VALUE("--trace"))) {
      trace_file = v;
    } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(a, "--version")) {
      unsigned major, minor;
      const char* lib = kiln_version(&major, &minor);
      printf("kiln-run %s (libkiln_rt %s)\nreads package format %u.0 to %u.%u\n",
             KILN_VERSION_STRING, lib, major, major, minor);
      return 0;
    } else if (!strcmp(a, "--profile")) {
      profile = 1;
    } else if (!strcmp(a, "--info")) {
      info = 1;
    } else if (!strcmp(a, "--selftest")) {
      selftest = 1;
    } else if (a[0] == '-') {
      fprintf(stderr, "kiln-run: unknown option '%s'\n", a);
      usage(stderr);
      return 2;
    } else if (!package) {
      package = a;
    } else {
      fprintf(stderr, "kiln-run: more than one package given\n");
      return 2;
    }
  }
  if (!package) {
    usage(stderr);
    return 2;
  }
  kiln_model_options mo;
  kiln_model_options_init(&mo);
  mo.trusted_keys = (const uint8_t(*)[32])keys;
  mo.num_trusted_keys = n_keys;
  mo.require_signature = n_keys > 0;
  mo.variant = variant;
  kiln_model* model = NULL;
  double t0 = now_ms();
  if (check(kiln_model_load_file(package, &mo, &model), "loading the package")) return 1;
  double load_ms = now_ms() - t0;
  if (info) {
    printf("load_ms: %.3f\n", load_ms);
    print_info(model);
    kiln_model_release(model);
    return 0;
  }
  if (selftest) {
    kiln_selftest_report rep;
    memset(&rep, 0, sizeof rep);
    rep.struct_size = sizeof rep;
    if (check(kiln_model_selftest(model, (size_t)threads, &rep), "the self-test")) {
      kiln_model_release(model);
      return 1;
    }
    for (size_t o = 0; o < rep.num_outputs && o < KILN_SELFTEST_MAX_OUTPUTS; ++o) {
      kiln_tensor_info t;
      t.struct_size = sizeof t;
      kiln_model_output_info(model, o, &t);
      printf("selftest: output '%s': error %.3g (tolerance %.3g)\n", t.name, rep.output_error[o],
             rep.tolerance);
    }
    printf("selftest: %s\n", rep.passed ? "passed" : "FAILED");
    kiln_model_release(model);
    return rep.passed ? 0 : 1;
  }
  kiln_session_options so;
  kiln_session_options_init(&so);
  so.num_threads = (size_t)threads;
  so.profile = profile;
  so.trace = trace_file != NULL;
  kiln_session* session = NULL;
  int rc = 1;
  npy_array arrays[MAX_INPUTS];
  int n_arrays = 0;
  if (check(kiln_session_create(model, &so, &session), "creating a session")) goto out;
  double ready_ms =
      now_ms() - t0; /* load + session: what an application waits before its first run */
  size_t n_inputs;
  kiln_model_input_count(model, &n_inputs);
  for (int i = 0; i < n_in; ++i) {
    size_t idx;
    if (check(kiln_model_find_input(model, in_name[i], &idx), "--input")) goto out;
    char err[512];
    if (npy_read(in_file[i], &arrays[n_arrays], err, sizeof err)) {
      fprintf(stderr, "kiln-run: --input %s: %s\n", in_name[i], err);
      goto out;
    }
    npy_array* arr = &arrays[n_arrays++];
    kiln_tensor_info t;
    t.struct_size = sizeof t;
    kiln_model_input_info(model, idx, &t);
    /* An input with symbolic axes takes the array's shape (the runtime checks its bounds). */
    if (t.axis_symbols) {
      if (check(kiln_session_set_input_shaped(session, idx, arr->dtype, arr->data, arr->size_bytes,
                                              arr->rank, arr->shape),
                "--input"))
        goto out;
      continue;
    }
    int shape_ok = arr->rank == t.rank;
    for (size_t k = 0; shape_ok && k < t.rank; ++k) shape_ok = arr->shape[k] == t.shape[k];
    if (!shape_ok) {
      char want[256], got[256];
      fprintf(stderr, "kiln-run: --input %s: expected %s, got %s (in '%s')\n", in_name[i],
              dims_text(t.rank, t.shape, want, sizeof want),
              dims_text(arr->rank, arr->shape, got, sizeof got), in_file[i]);
      goto out;
    }
    if (check(kiln_session_set_input(session, idx, arr->dtype, arr->data, arr->size_bytes),
              "--input"))
      goto out;
  }
  if (check(kiln_session_run(session), "running")) goto out;
  if (repeat > 0) {
    double* times = malloc((size_t)repeat * sizeof(double));
    if (!times) goto out;
    for (int r = 0; r < repeat; ++r) {
      double s = now_ms();
      if (check(kiln_session_run(session), "running")) {
        free(times);
        goto out;
      }
      times[r] = now_ms() - s;
    }
    qsort(times, (size_t)repeat, sizeof(double), cmp_double);
    double median =
        repeat % 2 ? times[repeat / 2] : 0.5 * (times[repeat / 2 - 1] + times[repeat / 2]);
    printf("latency_ms: min=%.4f median=%.4f\n", times[0], median);
    printf("ready_ms: %.3f\n", ready_ms);
    free(times);
  }
  if (trace_file) {
    char err[512];
    if (write_trace(trace_file, model, session, (size_t)threads, err, sizeof err)) {
      fprintf(stderr, "kiln-run: --trace: %s\n", err);
      goto out;
    }
  }
  if (profile) {
    size_t nl;
    double total = 0;
    kiln_session_launch_count(session, &nl);
    for (size_t l = 0; l < nl; ++l) {
      size_t k;
      uint64_t runs;
      double ms;
      kiln_session_launch_profile(session, l, &k, &runs, &ms);
      total += runs ? ms / (double)runs : 0.0;
    }
    printf("%-6s %-5s %-8s %5s %10s %6s %8s %6s  %s\n", "launch", "group", "kernel", "tasks",
           "mean_ms", "%", "GFLOP/s", "peak%", "computes");
    double total_flops = 0;
    for (size_t l = 0; l < nl; ++l) {
      size_t k;
      uint64_t runs;
      double ms;
      const char* name = "?";
      kiln_launch_info li;
      li.struct_size = sizeof li;
      kiln_session_launch_profile(session, l, &k, &runs, &ms);
      kiln_model_kernel_name(model, k, &name);
      kiln_model_launch_info(model, l, &li);
      double mean = runs ? ms / (double)runs : 0.0;
      double gflops = mean > 0 ? (double)li.flops / (mean * 1e6) : 0.0;
      total_flops += (double)li.flops;
      char peak_text[16] = "-";
      if (peak > 0 && li.flops)
        snprintf(peak_text, sizeof peak_text, "%.1f", 100.0 * gflops / (peak * threads));
      printf("%-6zu %-5zu %-8s %5zu %10.4f %6.2f %8.2f %6s  %s\n", l, li.group, name, li.num_tasks,
             mean, total > 0 ? 100.0 * mean / total : 0.0, gflops, peak_text, li.label);
    }
    printf("total_ms: %.4f (launches one at a time), %.3f GFLOP, %.2f GFLOP/s\n", total,
           total_flops * 1e-9, total > 0 ? total_flops / (total * 1e6) : 0.0);
  }
  if (out_dir) {
    if (mkdir(out_dir, 0777) != 0 && errno != EEXIST) {
      fprintf(stderr, "kiln-run: cannot create '%s'\n", out_dir);
      goto out;
    }
    size_t n_out;
    kiln_model_output_count(model, &n_out);
    for (size_t o = 0; o < n_out; ++o) {
      kiln_tensor_info t;
      t.struct_size = sizeof t;
      kiln_model_output_info(model, o, &t);
      const void* data;
      size_t size;
      if (check(kiln_session_output(session, o, &data, &size), "reading an output")) goto out;
      size_t rank;
      const int64_t* shape;
      if (check(kiln_session_output_shape(session, o, &rank, &shape), "reading an output"))
        goto out;
      char file[1024];
      int n = snprintf(file, sizeof file, "%s/", out_dir);
      for (const char* c = t.name; *c && n < (int)sizeof file - 5; ++c)
        file[n++] = (isalnum((unsigned char)*c) || *c == '.' || *c == '_' || *c == '-') ? *c : '_';
      snprintf(file + n, sizeof file - (size_t)n, ".npy");
      char err[512];
      if (npy_write(file, t.dtype, rank, shape, data, size, err, sizeof err)) {
        fprintf(stderr, "kiln-run: %s\n", err);
        goto out;
      }
    }
  }
  rc = 0;
out:
  for (int i = 0; i < n_arrays; ++i) npy_free(&arrays[i]);
  for (int i = 0; i < n_in; ++i) free((void*)in_name[i]);
  kiln_session_release(session);
  kiln_model_release(model);
  return rc;
}
