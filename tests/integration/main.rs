mod score_vectors;
mod trivy_parity;
mod trivy_suite;
