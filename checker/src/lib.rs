//! checker (see ARCHITECTURE.md).
