/*
 * The checkpoint gate: preloaded (LD_PRELOAD) into a Spark driver or executor, it holds the calling
 * thread inside rename() of a streaming checkpoint's commit files while the harness has armed it, so
 * that a fault fires exactly at a micro-batch phase instead of racing it.
 *
 * Spark writes every checkpoint log entry (offsets/N, commits/N) and every state store version to a
 * temporary file and renames it into place (CheckpointFileManager createAtomic); on a local file system
 * that rename is libc's rename() (Hadoop's RawLocalFileSystem -> java.io.File.renameTo / Files.move).
 * So "before the rename of commits/N" is "batch N's output is visible, its commit not written", "after
 * the rename of offsets/N" is "batch N's offsets logged, no task yet", and so on. A state store version
 * V is, under .../state/<operator>/<partition>/ (deeper for a join's or transformWithState's stores):
 * V.delta (the default HDFS-backed store), V.changelog (RocksDB with changelog checkpointing), V.zip
 * (RocksDB without it; with it, a snapshot a background thread uploads later), and with state checkpoint
 * format v2, V_<unique id>.changelog / V_<unique id>.zip.
 *
 * Control, all in $STREAMCHAOS_GATE_DIR (nothing happens without it; one open per checkpoint rename):
 *   arm        written by the harness: one rule "<log> <when> <min> <gen> [<scope>]": log = commits | offsets |
 *              state (a state store version's file) | task (an executor's task finishing its output: a
 *              shuffle file, or a file-writing task's commit; numbered 0), when = before | after (the
 *              rename), min = the smallest batch (state: version) held, gen = this arming's number, scope
 *              (optional, the rest of the line) = the one query's checkpoint directory, canonical: a
 *              commits / offsets / state rename holds only when its target's directory resolves below it
 *              (a job with two queries renames the same numbers in two checkpoints; only the tracked one's
 *              batch is the one the harness aims at). A task's file is not in a checkpoint: no scope.
 *   held       written here, once per arming, by the first thread a rule matches (link(2) of a complete
 *              file: exclusive and atomic): "<log> <when> <n> <pid> <tid> <epoch ns> <thread> <path>"
 *              (<thread>: the thread's name as the kernel has it, 15 characters, blanks as '_');
 *              a later match while it exists passes through (a restarted driver replaying the batch is
 *              not held)
 *   release.<gen>  written by the harness: the thread held by arming <gen> goes on. So it does once arm
 *              is gone or names another arming (a state, not an event: a hold never misses its release
 *              however fast the harness re-arms); and never later than $STREAMCHAOS_GATE_MAX_HOLD_MS
 *              (default 120000)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef int (*rename_fn)(const char *, const char *);
typedef int (*renameat_fn)(int, const char *, int, const char *);
typedef int (*renameat2_fn)(int, const char *, int, const char *, unsigned int);

enum { LOG_NONE = 0, LOG_COMMITS, LOG_OFFSETS, LOG_STATE, LOG_TASK };
static const char *const LOG_NAMES[] = {"none", "commits", "offsets", "state", "task"};

static const char *gate_dir(void) {
    const char *d = getenv("STREAMCHAOS_GATE_DIR");
    return d && *d ? d : NULL;
}

static int all_digits(const char *s, size_t n) {
    if (n == 0 || n > 18) return 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] < '0' || s[i] > '9') return 0;
    return 1;
}

/* Whether `b` (the base name of `path`) is a state store version's file: "<digits>[_<id>].<ext>" with
   ext delta, changelog or zip, under a checkpoint's state/ directory. */
static int is_state_version(const char *path, const char *b) {
    static const char *const EXTS[] = {".delta", ".changelog", ".zip"};
    const char *dot = strchr(b, '.');
    const char *end = dot;
    if (!dot || !strstr(path, "/state/")) return 0;
    const char *under = memchr(b, '_', (size_t)(dot - b));
    if (under) end = under; /* checkpoint format v2: V_<unique id> */
    if (!all_digits(b, (size_t)(end - b)) || (under && under + 1 == dot)) return 0;
    for (size_t i = 0; i < sizeof EXTS / sizeof *EXTS; i++)
        if (strcmp(dot, EXTS[i]) == 0) return 1;
    return 0;
}

/* Which checkpoint log `path` is the final name of, and its batch (or state version) in *n. */
static int classify(const char *path, long long *n) {
    const char *base = strrchr(path, '/');
    if (!base || base == path) return LOG_NONE;
    const char *b = base + 1;
    size_t len = strlen(b);
    /* a task finishing its output: a map task's shuffle file, or a file-writing task's commit
       (FileOutputCommitter v1 renames its attempt directory to _temporary/<job>/task_...) */
    if ((strncmp(b, "shuffle_", 8) == 0 && len > 13 && strcmp(b + len - 5, ".data") == 0) ||
        (strncmp(b, "task_", 5) == 0 && strstr(path, "/_temporary/") != NULL)) {
        *n = 0;
        return LOG_TASK;
    }
    if (is_state_version(path, b)) {
        *n = atoll(b);
        return LOG_STATE;
    }
    if (!all_digits(b, len)) return LOG_NONE;
    const char *p = base - 1;
    while (p > path && *(p - 1) != '/') p--;
    size_t plen = (size_t)(base - p);
    *n = atoll(b);
    if (plen == 7 && strncmp(p, "commits", 7) == 0) return LOG_COMMITS;
    if (plen == 7 && strncmp(p, "offsets", 7) == 0) return LOG_OFFSETS;
    return LOG_NONE;
}

static int exists(const char *dir, const char *name) {
    char path[PATH_MAX];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

/* The armed rule, if any: its log and when in rlog / rwhen (16 bytes each), its min batch, its scope in
   `scope` (PATH_MAX bytes; "" for none) when given; its generation, or -1 when nothing is armed. */
static long long read_arm(const char *dir, char *rlog, char *rwhen, long long *min, char *scope) {
    char path[PATH_MAX], rest[PATH_MAX] = "";
    long long gen = -1;
    snprintf(path, sizeof path, "%s/arm", dir);
    FILE *f = fopen(path, "re");
    if (!f) return -1;
    int got = fscanf(f, "%15s %15s %lld %lld %4095[^\n]", rlog, rwhen, min, &gen, rest);
    fclose(f);
    if (scope) snprintf(scope, PATH_MAX, "%s", got == 5 ? rest : "");
    return got >= 4 ? gen : -1;
}

/* Whether the directory `to` is renamed into resolves to `scope` or below it (an empty scope: any). */
static int in_scope(const char *to, const char *scope) {
    char parent[PATH_MAX], real[PATH_MAX];
    if (!*scope) return 1;
    snprintf(parent, sizeof parent, "%s", to);
    char *slash = strrchr(parent, '/');
    if (!slash) return 0;
    *slash = '\0';
    if (!realpath(*parent ? parent : "/", real)) return 0;
    size_t n = strlen(scope);
    return strncmp(real, scope, n) == 0 && (real[n] == '/' || real[n] == '\0');
}

/* The generation of the armed rule if it matches (log, when, n) and the rename's target, else -1. */
static long long armed(const char *dir, int log, const char *when, long long n, const char *to) {
    char rlog[16], rwhen[16], scope[PATH_MAX];
    long long min = 0, gen = read_arm(dir, rlog, rwhen, &min, scope);
    if (gen < 0 || strcmp(rlog, LOG_NAMES[log]) != 0 || strcmp(rwhen, when) != 0 || n < min) return -1;
    if (log != LOG_TASK && !in_scope(to, scope)) return -1;
    return gen;
}

/* The calling thread's name as the kernel has it (a JVM names its threads: "Executor task l" is a
   task's), blanks as '_' so that the marker's fields stay separated; "?" when it cannot be read. */
static void thread_name(long tid, char *name, size_t size) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%ld/comm", tid);
    snprintf(name, size, "?");
    FILE *f = fopen(path, "re");
    if (!f) return;
    if (!fgets(name, (int)size, f)) snprintf(name, size, "?");
    fclose(f);
    name[strcspn(name, "\n")] = '\0';
    for (char *c = name; *c; c++)
        if (*c == ' ' || *c == '\t') *c = '_';
    if (!*name) snprintf(name, size, "?");
}

/* Announce the hold (exclusively: only the first match of an arming holds). */
static int announce(const char *dir, int log, const char *when, long long n, const char *to) {
    char tmp[PATH_MAX], held[PATH_MAX], name[32];
    struct timespec ts;
    long tid = syscall(SYS_gettid);
    clock_gettime(CLOCK_REALTIME, &ts);
    thread_name(tid, name, sizeof name);
    snprintf(tmp, sizeof tmp, "%s/.held-%d-%ld", dir, (int)getpid(), tid);
    snprintf(held, sizeof held, "%s/held", dir);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return 0;
    dprintf(fd, "%s %s %lld %d %ld %lld %s %s\n", LOG_NAMES[log], when, n, (int)getpid(), tid,
            (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec, name, to);
    close(fd);
    int won = link(tmp, held) == 0;
    unlink(tmp);
    return won;
}

/* Wait while arming `gen` is in force and not released. */
static void hold(const char *dir, long long gen) {
    const char *cap = getenv("STREAMCHAOS_GATE_MAX_HOLD_MS");
    long long left_ms = cap && *cap ? atoll(cap) : 120000;
    struct timespec ms = {0, 1000000};
    char release[64], rlog[16], rwhen[16];
    long long min;
    snprintf(release, sizeof release, "release.%lld", gen);
    while (left_ms-- > 0 && read_arm(dir, rlog, rwhen, &min, NULL) == gen && !exists(dir, release))
        nanosleep(&ms, NULL);
}

/* Hold here if the gate is armed for this rename at this `when`. */
static void gate(const char *to, const char *when) {
    const char *dir = gate_dir();
    long long n = 0;
    if (!dir || !to) return;
    int log = classify(to, &n);
    if (log == LOG_NONE) return;
    int saved = errno;
    long long gen = armed(dir, log, when, n, to);
    if (gen >= 0 && announce(dir, log, when, n, to)) hold(dir, gen);
    errno = saved;
}

int rename(const char *from, const char *to) {
    static rename_fn real;
    if (!real) real = (rename_fn)dlsym(RTLD_NEXT, "rename");
    gate(to, "before");
    int r = real(from, to);
    if (r == 0) gate(to, "after");
    return r;
}

int renameat(int fromfd, const char *from, int tofd, const char *to) {
    static renameat_fn real;
    if (!real) real = (renameat_fn)dlsym(RTLD_NEXT, "renameat");
    gate(to, "before");
    int r = real(fromfd, from, tofd, to);
    if (r == 0) gate(to, "after");
    return r;
}

int renameat2(int fromfd, const char *from, int tofd, const char *to, unsigned int flags) {
    static renameat2_fn real;
    if (!real) real = (renameat2_fn)dlsym(RTLD_NEXT, "renameat2");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    gate(to, "before");
    int r = real(fromfd, from, tofd, to, flags);
    if (r == 0) gate(to, "after");
    return r;
}
