"""The forum site (`reddit`): a Postmill-like link aggregator with forums, posts, threaded comments and votes."""
