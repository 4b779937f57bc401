//! The process start, in place of Rust's runtime start (`#![no_main]` in
//! main.rs): what that start did and harness relies on, without its one
//! costly step.
//!
//! Key decision: Rust's start finds the main thread's stack guard with
//! `pthread_getattr_np`, which reads and `sscanf`s `/proc/self/maps`
//! line by line: 0.13 M instructions and 8 system calls of a 2-line check's
//! 0.80 M (BENCHMARKS.md, "h10-startup"), spent only to word a stack
//! overflow's message. Here a handler on an alternate signal stack names
//! any `SIGSEGV` / `SIGBUS` of the main thread (a stack overflow or a
//! memory fault) on stderr and lets the signal end the process as it
//! would have. Threads the process starts get no alternate stack (Rust's
//! start gave them one): their stack overflow ends the process by the
//! same signal, without the sentence. The rest is as Rust's start: the
//! standard descriptors reopened on `/dev/null` when closed, `SIGPIPE`
//! ignored (a closed socket or pipe is an error, not death; `check` and
//! `history` restore the default in main.rs), a panic leaving `main` is
//! exit status 101, stdout flushed at the end.

use std::ffi::c_int;

/// Exit status of a panic that reached `main` (as Rust's start).
pub const PANIC_EXIT: u8 = 101;

/// Bytes of the main thread's alternate signal stack.
const ALT_STACK_BYTES: usize = 64 << 10;

/// The start's work before `main`'s body: descriptors, `SIGPIPE`, the
/// fault handler. (Unit tests run under Rust's own start.)
#[cfg_attr(test, allow(dead_code))]
pub fn init() {
    reopen_closed_standard_fds();
    ignore_sigpipe();
    name_main_thread_faults();
}

/// Runs `body` as Rust's start runs `main`: a panic (already printed by
/// the panic hook) becomes [`PANIC_EXIT`]; stdout is flushed after.
pub fn run(body: fn() -> u8) -> c_int {
    use std::io::Write as _;
    let code = std::panic::catch_unwind(body).unwrap_or(PANIC_EXIT);
    // A stdout that cannot be flushed (its reader went away) changes
    // nothing: the verdict is the exit code.
    let _ = std::io::stdout().flush();
    c_int::from(code)
}

/// Standard input, output and error, each reopened on `/dev/null` when
/// the process was started with it closed, so that no file opened later
/// takes its number (and `println!` writes into it).
#[allow(unsafe_code)]
fn reopen_closed_standard_fds() {
    let mut fds = [0, 1, 2].map(|fd| libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    });
    // SAFETY: `fds` is a valid array of 3 pollfd for the call's duration.
    let polled = unsafe { libc::poll(fds.as_mut_ptr(), 3, 0) };
    for pfd in &fds {
        let closed = if polled < 0 {
            // No poll (a sandbox): ask each descriptor.
            // SAFETY: F_GETFD only reads the descriptor's flags.
            unsafe { libc::fcntl(pfd.fd, libc::F_GETFD) == -1 }
        } else {
            pfd.revents & libc::POLLNVAL != 0
        };
        if closed {
            // SAFETY: a constant NUL-terminated path; the lowest free
            // number is the closed one, as descriptors below it are open.
            let fd = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDWR) };
            if fd == -1 {
                // No /dev/null: Rust's start aborts here too.
                std::process::abort();
            }
        }
    }
}

/// `SIGPIPE` ignored, as Rust's start leaves it.
#[allow(unsafe_code)]
fn ignore_sigpipe() {
    // SAFETY: setting one signal's disposition, before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

/// An alternate stack for the main thread and the handler of `SIGSEGV` and
/// `SIGBUS` (left alone when something set another handler before).
#[allow(unsafe_code)]
fn name_main_thread_faults() {
    // Never freed: the handler may run until the process ends. mimalloc
    // maps it untouched; pages are faulted in only if the handler runs.
    let stack: &'static mut [u8] = Box::leak(vec![0u8; ALT_STACK_BYTES].into_boxed_slice());
    let ss = libc::stack_t {
        ss_sp: stack.as_mut_ptr().cast(),
        ss_flags: 0,
        ss_size: stack.len(),
    };
    // SAFETY: `ss` describes memory that lives as long as the process.
    if unsafe { libc::sigaltstack(&ss, std::ptr::null_mut()) } != 0 {
        return;
    }
    for signal in [libc::SIGSEGV, libc::SIGBUS] {
        // SAFETY: sigaction reads and writes only the structs passed; a
        // zeroed sigaction is a valid value (empty mask, no flags).
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(signal, std::ptr::null(), &mut old);
            if old.sa_sigaction != libc::SIG_DFL {
                continue;
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_fault as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

/// What the handler writes on stderr for `signal`.
fn fault_message(signal: c_int) -> &'static [u8] {
    if signal == libc::SIGBUS {
        b"\nharness: fatal signal SIGBUS (a memory fault); ending\n"
    } else {
        b"\nharness: fatal signal SIGSEGV (a stack overflow or a memory fault); ending\n"
    }
}

/// The handler: one line on stderr, the default disposition back, and a
/// return, so the faulting instruction runs again and the signal ends the
/// process (as Rust's handler does for a fault outside the stack guard).
/// Only async-signal-safe calls.
#[allow(unsafe_code)]
extern "C" fn on_fault(signal: c_int, _info: *mut libc::siginfo_t, _ctx: *mut libc::c_void) {
    let msg = fault_message(signal);
    // SAFETY: write(2) and sigaction(2) are async-signal-safe; `msg` is
    // static; a zeroed sigaction is SIG_DFL with an empty mask.
    unsafe {
        libc::write(2, msg.as_ptr().cast(), msg.len());
        let action: libc::sigaction = std::mem::zeroed();
        libc::sigaction(signal, &action, std::ptr::null_mut());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_is_exit_status_101_and_a_return_its_code() {
        assert_eq!(run(|| 7), 7);
        assert_eq!(run(|| 0), 0);
        let hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let code = run(|| panic!("boom"));
        std::panic::set_hook(hook);
        assert_eq!(code, c_int::from(PANIC_EXIT));
    }

    #[test]
    fn each_fault_is_named() {
        let segv = String::from_utf8_lossy(fault_message(libc::SIGSEGV));
        let bus = String::from_utf8_lossy(fault_message(libc::SIGBUS));
        assert!(segv.contains("SIGSEGV") && segv.contains("stack overflow"));
        assert!(bus.contains("SIGBUS"));
        assert!(segv.ends_with('\n') && bus.ends_with('\n'));
    }
}
