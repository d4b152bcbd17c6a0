"""Getting bytes off the network safely: the shared HTTP client, its response cache,
network-safety rules and page fetching with main-text extraction."""
