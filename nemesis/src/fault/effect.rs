//! Kill, start, pause and resume as they took effect, per node.
//!
//! Before a kill or a pause the nemesis asks the database whether its
//! process runs ([`crate::process::Process::is_running`]; a database that
//! cannot tell is asked nothing, and a node this nemesis killed and did
//! not restart counts as down). A kill of a process that is down is a
//! no-op, said as such in the `info`'s error; a pause of one fails with
//! its reason; a kill ends a pause (a killed, restarted process is not
//! paused). The `info` completion's value lists the nodes on which the op
//! took effect — for a kill or a pause, those now down or paused; for a
//! start or a resume, those now running — so the fault windows
//! (`store::run::faults`) cover what happened, not what was asked.

use super::{Action, FaultError, Nemesis, join_errors, nodes_data};
use crate::process::ProcessError;
use tokio::task::JoinSet;

/// What one action did on one node.
enum Effect {
    /// It took effect.
    Done,
    /// Nothing to do (the reason); the node is in the state asked.
    NoOp(String),
    /// It failed; the node is not in the state asked.
    Failed(FaultError),
}

impl Nemesis {
    /// Runs `action` on `nodes` in parallel; records the nodes it took
    /// effect on as the op's result and the no-ops as its note.
    ///
    /// # Errors
    /// The nodes where it failed (a pause of a process that is down).
    pub(super) async fn process_effect(
        &self,
        nodes: &[String],
        action: Action,
    ) -> Result<(), FaultError> {
        let process = self.process.clone().ok_or(FaultError::NoProcess)?;
        let (removed, killed) = {
            let a = self.lock();
            (a.removed.clone(), a.killed.clone())
        };
        let mut set = JoinSet::new();
        for n in nodes {
            let node = self.remote(n)?.node().clone();
            let p = process.clone();
            let is_removed = removed.contains(n);
            let was_killed = killed.contains(n);
            set.spawn(async move {
                let name = node.name.clone();
                let running = p.is_running(&node).await.ok().flatten();
                let effect = match action {
                    // A removed node is membership's until it joins:
                    // starting it would bring it back without its data.
                    Action::Start if is_removed => Effect::NoOp(
                        "removed from the cluster; it starts when it joins".to_string(),
                    ),
                    Action::Kill if running == Some(false) => {
                        Effect::NoOp("not running: nothing to kill".to_string())
                    }
                    Action::Pause
                        if running == Some(false) || (running.is_none() && was_killed) =>
                    {
                        Effect::Failed(FaultError::Process(ProcessError {
                            node: name.clone(),
                            action: "pause",
                            message: "not running (killed, not restarted): nothing to pause"
                                .to_string(),
                        }))
                    }
                    Action::Start if running == Some(true) => {
                        Effect::NoOp("already running".to_string())
                    }
                    _ => match match action {
                        Action::Kill => p.kill(&node).await,
                        Action::Start => p.start(&node).await,
                        Action::Pause => p.pause(&node).await,
                        Action::Resume => p.resume(&node).await,
                    } {
                        Ok(()) => Effect::Done,
                        Err(e) => Effect::Failed(FaultError::Process(e)),
                    },
                };
                (name, effect)
            });
        }
        let mut done: Vec<String> = Vec::new();
        let mut notes: Vec<String> = Vec::new();
        let mut errs = Vec::new();
        while let Some(r) = set.join_next().await {
            match r {
                Ok((n, Effect::Done)) => done.push(n),
                Ok((n, Effect::NoOp(why))) => {
                    notes.push(format!("node {n}: {}: no-op: {why}", action.name()));
                    // A start or a resume that had nothing to do leaves
                    // the node running: the fault is over there too.
                    if matches!(action, Action::Start | Action::Resume) {
                        done.push(n);
                    }
                }
                Ok((_, Effect::Failed(e))) => errs.push(e),
                Err(e) => errs.push(FaultError::Process(ProcessError {
                    node: "?".to_string(),
                    action: action.name(),
                    message: format!("task failed: {e}"),
                })),
            }
        }
        // In test order, as asked.
        done.sort_by_key(|n| nodes.iter().position(|x| x == n));
        notes.sort();
        {
            let mut a = self.lock();
            match action {
                // SIGKILL ends a pause: the restarted process runs.
                Action::Kill => {
                    for n in &done {
                        a.paused.remove(n);
                    }
                }
                Action::Start => {
                    for n in &done {
                        a.killed.remove(n);
                    }
                }
                Action::Resume => {
                    for n in &done {
                        a.paused.remove(n);
                    }
                }
                Action::Pause => {
                    for n in &done {
                        a.paused.insert(n.clone());
                    }
                }
            }
            a.result = Some(nodes_data(&done));
            if !notes.is_empty() {
                a.note = Some(notes.join("; "));
            }
        }
        join_errors(errs)
    }

    /// What the last fault did not do though asked (its no-ops), taken
    /// once; recorded as the `info`'s error beside any failure.
    pub fn take_note(&self) -> Option<String> {
        self.lock().note.take()
    }
}

impl Action {
    fn name(self) -> &'static str {
        match self {
            Action::Kill => "kill",
            Action::Start => "start",
            Action::Pause => "pause",
            Action::Resume => "resume",
        }
    }
}
