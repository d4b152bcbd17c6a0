"""Online search engines as evidence sources: Wikipedia, web search (keyed and free),
scholarly indexes, Reddit and fact-check sites."""
