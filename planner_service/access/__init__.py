"""Who is asking and what they may do: principals (access/principals.py), the grants policy
(access/policy.py), the tokens that name a principal (access/tokens.py, access/oidc.py) and the audit log
(access/audit.py)."""
