"""Dense mention retrieval: the bi-encoder, its training data and its training loop."""
