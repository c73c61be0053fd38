"""What a search is made of, below both the store and retrieval: `keywords` (the text keyword search
indexes and matches, Chinese as character bigrams) and `filters` (Spring AI filter expressions compiled
to parameterised SQL).

A leaf: it imports neither `rag.store` nor `rag.retrieve`, so the store can index and filter with
it while retrieval builds on the store.
"""
