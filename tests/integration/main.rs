mod cli;
mod diagnostics;
mod schema;
mod score_vectors;
