//! The durability side of [`Nemesis`]: corruption, snapshot/restore of
//! file chunks and disk errors, sent to each node's lossy filesystem.

use super::*;

impl Nemesis {
    pub(super) async fn start_durability(&self, d: &DurabilityFault) -> Result<(), FaultError> {
        let nodes = d.nodes();
        match d {
            DurabilityFault::Corrupt { .. } => {
                self.lock().killed.extend(nodes.iter().cloned());
                self.each_process(nodes, Action::Kill).await?;
                self.each_ctl(nodes, &Command::Lose).await?;
                let replies = self.each_ctl(nodes, &d.command("")).await?;
                let value = replies
                    .iter()
                    .map(|(n, r)| (Data::Str(n.clone()), durability::damage_data(r)))
                    .collect();
                self.lock().result = Some(Data::Map(value));
                Ok(())
            }
            DurabilityFault::Rollback { .. } => {
                let replies = self.each_ctl(nodes, &d.command("")).await?;
                let mut a = self.lock();
                for (n, r) in &replies {
                    if let Some(dmg) = r.damage.first() {
                        a.snapshots.insert(n.clone(), dmg.file.clone());
                    }
                }
                a.result = Some(Data::Map(
                    replies
                        .iter()
                        .map(|(n, r)| (Data::Str(n.clone()), durability::damage_data(r)))
                        .collect(),
                ));
                Ok(())
            }
            DurabilityFault::Disk { .. } => {
                self.lock().disk_failed.extend(nodes.iter().cloned());
                self.each_ctl(nodes, &d.command("")).await.map(|_| ())
            }
        }
    }

    /// The stop of a snapshot/restore: kill, lose un-synced writes, put the
    /// saved chunks back, start; the result names per node the file and
    /// the chunks restored.
    pub(super) async fn restore(&self, d: &DurabilityFault) -> Result<(), FaultError> {
        let nodes = d.nodes();
        self.lock().killed.extend(nodes.iter().cloned());
        self.each_process(nodes, Action::Kill).await?;
        self.each_ctl(nodes, &Command::Lose).await?;
        let mut value = Vec::new();
        let mut errs = Vec::new();
        for n in nodes {
            let file = self.lock().snapshots.remove(n);
            let Some(cmd) = file.and_then(|f| d.restore_command(&f)) else {
                continue;
            };
            match self.each_ctl(std::slice::from_ref(n), &cmd).await {
                Ok(replies) => value.extend(
                    replies
                        .iter()
                        .map(|(n, r)| (Data::Str(n.clone()), durability::damage_data(r))),
                ),
                Err(e) => errs.push(e),
            }
        }
        self.lock().result = Some(Data::Map(value));
        let started = self.each_process(nodes, Action::Start).await;
        if started.is_ok() {
            let mut a = self.lock();
            for n in nodes {
                a.killed.remove(n);
            }
        }
        errs.extend(started.err());
        join_errors(errs)
    }
}
