"""Figure 3 of the attention-path paper: one-shot image classification with trained heads (spec
``docs/papers/attention_paths.md`` §4.2, §2.5).

task           the episodes (support image + label token, query image) and their tokens
trained_model  the gradient-descent network (PyTorch, the ``[train]`` extra); trained_heads its stored function
training       ``attnverify train-one-shot``: train, export and cache the networks
analysis       theory points, head scores and pruning of one trained network
experiments    what the claims and the section share through the run's store
claims         the one-shot claims; section   the figure-3 panels (drawing only)
"""
