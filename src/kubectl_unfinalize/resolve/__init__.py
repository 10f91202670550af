"""What the user named (CRDs, groups, selectors, manifests, namespaces) -> Targets. Reads only."""
