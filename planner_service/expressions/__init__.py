"""Row filters: the expression tree, binding, literals, transforms, projections and residuals."""
