//! The BMAD-Method and spec-kit file formats, read as their tools write them.
//!
//! So far: where a spec-kit feature lives and how far its `tasks.md` is done, which the
//! supervisor's artifact checks (`spec_exists`, `plan_exists`, `tasks_exist`,
//! `tasks_all_checked`) are built on.

pub mod speckit;
