/* harness's wall-clock preload (nemesis/src/clock/walltime.rs): a clock
 * fault as a real machine has it. Only the wall clock moves:
 * CLOCK_REALTIME (and _COARSE, TAI), gettimeofday, time and timespec_get
 * read true time plus the offset of the control file; CLOCK_MONOTONIC,
 * CLOCK_BOOTTIME and the process/thread CPU clocks are never touched.
 *
 * Control file ($FAKETIME_TIMESTAMP_FILE, libfaketime's syntax as the
 * nemesis writes it): "+<seconds>" or "-<seconds>", optionally followed by
 * " x<rate>" (the clock gains rate-1 seconds per second since this process
 * started). Re-read at most every millisecond; a missing or unreadable
 * file is offset 0.
 *
 * Waits until an absolute wall-clock time (clock_nanosleep with
 * TIMER_ABSTIME, pthread_cond_timedwait on a CLOCK_REALTIME condvar,
 * pthread_cond_clockwait, sem_timedwait, pthread_mutex_timedlock,
 * pthread_rwlock_timed*) end when the faked wall clock reaches the
 * deadline, as under a stepped kernel clock, also when the step comes
 * while the wait is under way: with a control file, such a wait is cut
 * into slices of at most 20 ms of true time, and the deadline is
 * translated again with the offset in force after each. So a forward step
 * ends the wait within 20 ms of it, a backward step lengthens it.
 * clock_nanosleep, sem_timedwait and the timed locks loop inside; a
 * condvar wait returns 0 at the end of a slice whose deadline has not come
 * (a spurious wakeup, which POSIX allows: the caller re-checks its
 * predicate and waits again, with the deadline translated anew) --
 * looping inside could miss a signal sent between two slices.
 * timerfd_settime with TFD_TIMER_ABSTIME on a CLOCK_REALTIME timerfd gets
 * its deadline translated when it is armed; a step after that is not
 * followed (the kernel keeps the deadline), nor is TFD_TIMER_CANCEL_ON_SET
 * signalled by a step. timer_create/timer_settime deadlines are not
 * translated. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/timerfd.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);
typedef int (*gettimeofday_fn)(struct timeval *, void *);
typedef int (*clock_nanosleep_fn)(clockid_t, int, const struct timespec *, struct timespec *);
typedef int (*cond_timedwait_fn)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
typedef int (*cond_clockwait_fn)(pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *);
typedef int (*sem_timedwait_fn)(sem_t *, const struct timespec *);
typedef int (*mutex_timedlock_fn)(pthread_mutex_t *, const struct timespec *);
typedef int (*rwlock_timed_fn)(pthread_rwlock_t *, const struct timespec *);
typedef int (*timerfd_create_fn)(int, int);
typedef int (*timerfd_settime_fn)(int, int, const struct itimerspec *, struct itimerspec *);

static clock_gettime_fn real_clock_gettime;
static const char *control;
static volatile int control_read;
static int64_t start_mono_ns;
/* The offset (ns) and rate (parts per 1e9) last read, and when (mono ns). */
static volatile int64_t cached_offset_ns;
static volatile int64_t cached_rate_ppb = 1000000000;
static volatile int64_t cached_at_ns = -1;

static int64_t ns_of(const struct timespec *t) {
    return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

static struct timespec ts_of(int64_t ns) {
    struct timespec t;
    t.tv_sec = ns / 1000000000;
    t.tv_nsec = ns % 1000000000;
    if (t.tv_nsec < 0) {
        t.tv_nsec += 1000000000;
        t.tv_sec -= 1;
    }
    return t;
}

static void init(void) {
    if (!real_clock_gettime)
        real_clock_gettime = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
}

static int64_t mono_ns(void) {
    struct timespec t;
    init();
    if (!real_clock_gettime || real_clock_gettime(CLOCK_MONOTONIC, &t) != 0)
        return 0;
    return ns_of(&t);
}

/* A copy: servers rewrite their environment's memory for their process
 * title (PostgreSQL's postmaster does), so a pointer into it goes stale. */
static char control_path[4096];

static void read_env(void) {
    if (!control_read) {
        const char *p = getenv("FAKETIME_TIMESTAMP_FILE");
        if (p && strlen(p) < sizeof control_path) {
            strcpy(control_path, p);
            control = control_path;
        }
        start_mono_ns = mono_ns();
        control_read = 1;
    }
}

__attribute__((constructor)) static void walltime_init(void) {
    init();
    read_env();
}

/* Parses "+12.5 x1.05" into ns and ppb; 0 on success. */
static int parse(const char *s, int64_t *offset_ns, int64_t *rate_ppb) {
    char *end;
    while (*s == ' ' || *s == '\t') s++;
    if (*s != '+' && *s != '-') return -1;
    double off = strtod(s, &end);
    if (end == s) return -1;
    *offset_ns = (int64_t)(off * 1e9);
    *rate_ppb = 1000000000;
    s = end;
    while (*s == ' ' || *s == '\t') s++;
    if (*s == 'x') {
        double r = strtod(s + 1, &end);
        if (end != s + 1 && r > 0) *rate_ppb = (int64_t)(r * 1e9);
    }
    return 0;
}

/* True time to wall time, ns: the offset plus the rate's gain. */
static int64_t delta_ns(void) {
    read_env();
    int64_t now = mono_ns();
    if (control && (cached_at_ns < 0 || now - cached_at_ns > 1000000)) {
        char buf[128];
        int fd = open(control, O_RDONLY | O_CLOEXEC);
        int64_t off = 0, rate = 1000000000;
        if (fd >= 0) {
            ssize_t n = read(fd, buf, sizeof buf - 1);
            close(fd);
            if (n > 0) {
                buf[n] = 0;
                if (parse(buf, &off, &rate) != 0) {
                    off = 0;
                    rate = 1000000000;
                }
            }
        }
        cached_offset_ns = off;
        cached_rate_ppb = rate;
        cached_at_ns = now;
    }
    int64_t gain = 0;
    if (cached_rate_ppb != 1000000000) {
        double since = (double)(now - start_mono_ns);
        gain = (int64_t)(since * ((double)cached_rate_ppb - 1e9) / 1e9);
    }
    return cached_offset_ns + gain;
}

static int is_wall(clockid_t id) {
    return id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE || id == CLOCK_TAI;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    init();
    if (!real_clock_gettime) {
        errno = ENOSYS;
        return -1;
    }
    int r = real_clock_gettime(id, ts);
    if (r == 0 && ts && is_wall(id)) *ts = ts_of(ns_of(ts) + delta_ns());
    return r;
}

int gettimeofday(struct timeval *tv, void *tz) {
    static gettimeofday_fn real;
    if (!real) real = (gettimeofday_fn)dlsym(RTLD_NEXT, "gettimeofday");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    int r = real(tv, tz);
    if (r == 0 && tv) {
        struct timespec t = {tv->tv_sec, (long)tv->tv_usec * 1000};
        t = ts_of(ns_of(&t) + delta_ns());
        tv->tv_sec = t.tv_sec;
        tv->tv_usec = t.tv_nsec / 1000;
    }
    return r;
}

time_t time(time_t *out) {
    struct timespec t;
    if (clock_gettime(CLOCK_REALTIME, &t) != 0) return (time_t)-1;
    if (out) *out = t.tv_sec;
    return t.tv_sec;
}

int timespec_get(struct timespec *ts, int base) {
    if (base != TIME_UTC) return 0;
    if (clock_gettime(CLOCK_REALTIME, ts) != 0) return 0;
    return base;
}

/* An absolute wall-clock deadline as the kernel's true time. */
static struct timespec to_true(const struct timespec *abstime) {
    return ts_of(ns_of(abstime) - delta_ns());
}

/* The longest slice of true time an absolute wall-clock wait sleeps before
 * it translates its deadline again (a step is followed within it). */
#define SLICE_NS 20000000LL

/* The kernel's time on clock `id` now, ns. */
static int64_t true_now(clockid_t id) {
    struct timespec t;
    init();
    if (!real_clock_gettime || real_clock_gettime(id, &t) != 0) return 0;
    return ns_of(&t);
}

/* Whether the faked wall clock `id` has reached `deadline_ns`. */
static int passed(clockid_t id, int64_t deadline_ns) {
    return true_now(id) + delta_ns() >= deadline_ns;
}

/* The end, in the kernel's time on `id`, of the next slice of a wait until
 * wall time `deadline_ns`: the deadline translated with the offset now,
 * or SLICE_NS from now when that is earlier (only with a control file:
 * without one nothing steps). A deadline already passed comes back as is
 * (in the past: the real call returns at once). */
static struct timespec slice_end(clockid_t id, int64_t deadline_ns) {
    int64_t target = deadline_ns - delta_ns();
    int64_t now = true_now(id);
    if (control && target - now > SLICE_NS) target = now + SLICE_NS;
    return ts_of(target);
}

int clock_nanosleep(clockid_t id, int flags, const struct timespec *req, struct timespec *rem) {
    static clock_nanosleep_fn real;
    if (!real) real = (clock_nanosleep_fn)dlsym(RTLD_NEXT, "clock_nanosleep");
    if (!real) return ENOSYS;
    if ((flags & TIMER_ABSTIME) && req && is_wall(id)) {
        int64_t deadline = ns_of(req);
        while (!passed(id, deadline)) {
            struct timespec t = slice_end(id, deadline);
            int r = real(id, flags, &t, rem);
            if (r != 0) return r;
        }
        return 0;
    }
    return real(id, flags, req, rem);
}

/* glibc (>= 2.25): bit 1 of __wrefs is the condvar's clock (1: monotonic). */
static int cond_is_wall(pthread_cond_t *c) {
    return ((c->__data.__wrefs >> 1) & 1) == 0;
}

/* One slice of a timed condvar wait on wall clock `id` until `abstime`:
 * ETIMEDOUT only once the wall clock has reached it, else 0 (spurious). */
static int cond_slice(cond_clockwait_fn clockwait, cond_timedwait_fn timedwait, pthread_cond_t *c,
                      pthread_mutex_t *m, clockid_t id, const struct timespec *abstime) {
    int64_t deadline = ns_of(abstime);
    struct timespec t = slice_end(id, deadline);
    int r = clockwait ? clockwait(c, m, id, &t) : timedwait(c, m, &t);
    if (r == ETIMEDOUT && !passed(id, deadline)) return 0;
    return r;
}

int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *abstime) {
    static cond_timedwait_fn real;
    if (!real) real = (cond_timedwait_fn)dlvsym(RTLD_NEXT, "pthread_cond_timedwait", "GLIBC_2.3.2");
    if (!real) real = (cond_timedwait_fn)dlsym(RTLD_NEXT, "pthread_cond_timedwait");
    if (!real) return ENOSYS;
    if (abstime && cond_is_wall(c)) return cond_slice(NULL, real, c, m, CLOCK_REALTIME, abstime);
    return real(c, m, abstime);
}

int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m, clockid_t id, const struct timespec *abstime) {
    static cond_clockwait_fn real;
    if (!real) real = (cond_clockwait_fn)dlsym(RTLD_NEXT, "pthread_cond_clockwait");
    if (!real) return ENOSYS;
    if (abstime && is_wall(id)) return cond_slice(real, NULL, c, m, id, abstime);
    return real(c, m, id, abstime);
}

int sem_timedwait(sem_t *s, const struct timespec *abstime) {
    static sem_timedwait_fn real;
    if (!real) real = (sem_timedwait_fn)dlsym(RTLD_NEXT, "sem_timedwait");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    if (!abstime) return real(s, abstime);
    int64_t deadline = ns_of(abstime);
    for (;;) {
        struct timespec t = slice_end(CLOCK_REALTIME, deadline);
        int r = real(s, &t);
        if (r == 0 || errno != ETIMEDOUT || passed(CLOCK_REALTIME, deadline)) return r;
    }
}

/* A timed lock (mutex, rwlock) until wall time `abstime`, in slices. */
#define TIMED_LOCK(real, obj, abstime)                                        \
    do {                                                                      \
        if (!(abstime)) return real(obj, abstime);                            \
        int64_t deadline = ns_of(abstime);                                    \
        for (;;) {                                                            \
            struct timespec t = slice_end(CLOCK_REALTIME, deadline);          \
            int r = real(obj, &t);                                            \
            if (r != ETIMEDOUT || passed(CLOCK_REALTIME, deadline)) return r; \
        }                                                                     \
    } while (0)

int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime) {
    static mutex_timedlock_fn real;
    if (!real) real = (mutex_timedlock_fn)dlsym(RTLD_NEXT, "pthread_mutex_timedlock");
    if (!real) return ENOSYS;
    TIMED_LOCK(real, m, abstime);
}

int pthread_rwlock_timedrdlock(pthread_rwlock_t *l, const struct timespec *abstime) {
    static rwlock_timed_fn real;
    if (!real) real = (rwlock_timed_fn)dlsym(RTLD_NEXT, "pthread_rwlock_timedrdlock");
    if (!real) return ENOSYS;
    TIMED_LOCK(real, l, abstime);
}

int pthread_rwlock_timedwrlock(pthread_rwlock_t *l, const struct timespec *abstime) {
    static rwlock_timed_fn real;
    if (!real) real = (rwlock_timed_fn)dlsym(RTLD_NEXT, "pthread_rwlock_timedwrlock");
    if (!real) return ENOSYS;
    TIMED_LOCK(real, l, abstime);
}

/* The timerfds created on a wall clock (fds below 4096). */
static volatile unsigned char wall_timerfd[4096];

int timerfd_create(int id, int flags) {
    static timerfd_create_fn real;
    if (!real) real = (timerfd_create_fn)dlsym(RTLD_NEXT, "timerfd_create");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    int fd = real(id, flags);
    if (fd >= 0 && fd < (int)sizeof wall_timerfd) wall_timerfd[fd] = is_wall((clockid_t)id);
    return fd;
}

int timerfd_settime(int fd, int flags, const struct itimerspec *new_value, struct itimerspec *old) {
    static timerfd_settime_fn real;
    if (!real) real = (timerfd_settime_fn)dlsym(RTLD_NEXT, "timerfd_settime");
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    if ((flags & TFD_TIMER_ABSTIME) && new_value && fd >= 0 && fd < (int)sizeof wall_timerfd &&
        wall_timerfd[fd] && (new_value->it_value.tv_sec || new_value->it_value.tv_nsec)) {
        struct itimerspec v = *new_value;
        v.it_value = to_true(&new_value->it_value);
        return real(fd, flags, &v, old);
    }
    return real(fd, flags, new_value, old);
}
