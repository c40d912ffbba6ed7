"""Dense mention retrieval training: the bi-encoder's training data and its training loop (the encoder
itself is :mod:`features.encoder`, below the indexes that store its vectors)."""
