"""Rules and IO, testable without a UI: never imports Textual or torch."""
