"""The JSON forms of plans: the /plan body (rendered from columns), tasks fetched by index, content files."""
