mod score_vectors;
