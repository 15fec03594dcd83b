"""The code host site (`gitlab`): a GitLab-like host of projects, issues, merge requests, members and stars."""
