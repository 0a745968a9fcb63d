mod diagnostics;
mod score_vectors;
