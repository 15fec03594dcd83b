"""Pools for the code host seed. Written for this project; people, projects and texts are invented."""

FIRST = ["Alice", "Bruno", "Chloe", "Dmitri", "Elena", "Farid", "Greta", "Hiro", "Ines", "Jonas", "Kavya", "Lars",
         "Maya", "Nico", "Olga", "Pavel", "Quinn", "Rosa", "Sami", "Tara", "Umar", "Vera", "Wen", "Ximena", "Yusuf",
         "Zoe", "Amara", "Bjorn", "Carmen", "Diego", "Esther", "Felix", "Hana", "Ivan", "Julia", "Kofi", "Lena",
         "Marco", "Nadia"]
LAST = ["Andersen", "Bianchi", "Costa", "Dubois", "Eriksen", "Fischer", "Garcia", "Hoffmann", "Ito", "Jensen",
        "Kovacs", "Lindqvist", "Moreau", "Nakamura", "Okafor", "Petrov", "Quiroga", "Rossi", "Silva", "Tanaka",
        "Ueda", "Vargas", "Weber", "Xu", "Yilmaz", "Zhang", "Alvarez", "Brandt", "Chen", "Dahl"]

# group path -> (name, description)
GROUPS = {
    "pixelforge": ("PixelForge", "Open source graphics and UI tooling."),
    "openkit": ("OpenKit", "Small, well-tested libraries for everyday web development."),
    "datacraft": ("DataCraft", "Data pipelines, notebooks and machine learning experiments."),
    "a11y-collective": ("A11y Collective", "Accessibility resources and tools for the web."),
    "nimbus-labs": ("Nimbus Labs", "Cloud infrastructure and deployment tools."),
    "quillworks": ("Quillworks", "Writing, documentation and static site tools."),
    "terra-maps": ("Terra Maps", "Open geodata and map rendering."),
}

# (namespace, path, description, language, popularity 1-10)
PROJECTS = [
    ("byteblaze", "dotfiles", "My shell, editor and window manager configuration files.", "Shell", 3),
    ("byteblaze", "a11y-syntax-palette", "Syntax highlighting themes that meet WCAG contrast ratios.", "CSS", 6),
    ("byteblaze", "empathy-cards", "Printable prompts for empathetic design reviews.", "HTML", 4),
    ("byteblaze", "webring-hub", "A tiny webring for personal accessibility blogs.", "JavaScript", 3),
    ("byteblaze", "timeline-declutter", "Browser extension that hides board-movement events from issue timelines.",
     "JavaScript", 2),
    ("byteblaze", "blaze-notes", "Personal notes site built with a static site generator.", "Ruby", 1),
    ("byteblaze", "homelab-ansible", "Ansible playbooks for a home server.", "YAML", 2),
    ("pixelforge", "iconset-studio", "Design and export SVG icon sets.", "TypeScript", 8),
    ("pixelforge", "canvas-gan", "Generative adversarial network experiments rendered on canvas.", "Python", 9),
    ("pixelforge", "color-utils", "Colour conversion and contrast helpers.", "TypeScript", 7),
    ("pixelforge", "sprite-packer", "Packs images into sprite sheets.", "Go", 4),
    ("pixelforge", "pixel-fonts", "Bitmap fonts for retro interfaces.", "C", 3),
    ("pixelforge", "shader-playground", "Live editor for fragment shaders.", "JavaScript", 6),
    ("openkit", "tiny-router", "A 2 kB client-side router.", "JavaScript", 9),
    ("openkit", "form-guard", "Declarative form validation.", "TypeScript", 6),
    ("openkit", "date-tidy", "Immutable date helpers.", "TypeScript", 7),
    ("openkit", "local-vault", "A storage library for browser apps done right.", "JavaScript", 8),
    ("openkit", "http-mock-kit", "Record and replay HTTP fixtures in tests.", "Python", 5),
    ("openkit", "slugger", "URL slugs for every script and language.", "Rust", 4),
    ("openkit", "xlsx-writer-lite", "Write spreadsheet files without dependencies.", "PHP", 7),
    ("openkit", "admin-scaffold", "Generate admin dashboards for web apps.", "Ruby", 8),
    ("datacraft", "notebook-runner", "Run notebooks as batch jobs.", "Python", 5),
    ("datacraft", "ml-recipes", "Reproducible training recipes for small models.", "Python", 9),
    ("datacraft", "feature-store-lite", "A minimal feature store on SQLite.", "Python", 4),
    ("datacraft", "outbreak-tracker", "Dashboards for epidemic case data.", "Python", 6),
    ("datacraft", "chat-assistant", "A chat assistant for project documentation.", "Python", 7),
    ("datacraft", "tabular-bench", "Benchmarks for tabular learning.", "Python", 3),
    ("datacraft", "ffmpeg-pipes", "Python bindings for building media pipelines.", "Python", 8),
    ("a11y-collective", "a11y-handbook", "A community handbook of accessibility practices.", "Markdown", 10),
    ("a11y-collective", "contrast-checker", "Check colour contrast from the command line.", "Rust", 5),
    ("a11y-collective", "screenreader-notes", "Notes on screen reader behaviour across browsers.", "HTML", 4),
    ("a11y-collective", "focus-trap", "Keyboard focus management for dialogs.", "TypeScript", 6),
    ("a11y-collective", "design-tokens", "Accessible design tokens for UI kits.", "JSON", 7),
    ("nimbus-labs", "kube-deployer", "Opinionated deployments for small clusters.", "Go", 7),
    ("nimbus-labs", "auth-gateway", "Identity and access management gateway.", "Java", 9),
    ("nimbus-labs", "log-shipper", "Lightweight log forwarding agent.", "Go", 5),
    ("nimbus-labs", "terraform-modules", "Reusable infrastructure modules.", "HCL", 6),
    ("nimbus-labs", "android-sync", "Asynchronous networking for Android apps.", "Java", 8),
    ("nimbus-labs", "sliding-panel", "A sliding-up panel widget for Android.", "Java", 9),
    ("quillworks", "docs-theme", "A documentation theme with search.", "SCSS", 6),
    ("quillworks", "markdown-lint-rules", "Extra rules for Markdown linters.", "JavaScript", 4),
    ("quillworks", "static-press", "A static site generator for long-form writing.", "Go", 7),
    ("quillworks", "react-starter", "Create single-page apps with no build configuration.", "JavaScript", 10),
    ("quillworks", "changelog-bot", "Generates changelogs from merge requests.", "Ruby", 3),
    ("terra-maps", "tile-server", "Vector tile server for open map data.", "Rust", 6),
    ("terra-maps", "route-planner", "Walking and cycling directions.", "C++", 5),
    ("terra-maps", "geocoder-lite", "Offline address search.", "Python", 4),
    ("terra-maps", "map-styles", "Map styles for print and screen.", "JSON", 3),
]
# Projects owned by other users (namespace filled in from the generated users).
USER_PROJECTS = [
    ("vim-config", "Vim configuration with sensible defaults.", "Vim Script", 2),
    ("awesome-selfhosted-notes", "Notes on self-hosting services.", "Markdown", 5),
    ("pytorch-experiments", "Assorted deep learning experiments.", "Python", 4),
    ("recipe-box", "A recipe manager for the terminal.", "Rust", 2),
    ("resume", "My CV in LaTeX.", "TeX", 1),
    ("advent-solutions", "Puzzle solutions, one language per year.", "Haskell", 3),
    ("photo-sorter", "Sort photos into folders by date.", "Python", 2),
    ("keyboard-firmware", "Custom firmware for a split keyboard.", "C", 3),
    ("budget-cli", "Plain-text budgeting.", "Go", 2),
    ("weather-widget", "A desktop weather widget.", "JavaScript", 1),
    ("chess-engine", "A small UCI chess engine.", "C++", 4),
    ("blog", "Personal blog.", "HTML", 1),
]

LABELS = [("bug", "#d9534f"), ("enhancement", "#5cb85c"), ("question", "#428bca"), ("documentation", "#f0ad4e"),
          ("help wanted", "#009966"), ("good first issue", "#7f8c8d"), ("duplicate", "#cccccc"),
          ("wontfix", "#333333"), ("accessibility", "#8e44ad"), ("performance", "#e67e22")]

ISSUE_TEMPLATES = [
    "{thing} fails when {cond}", "Add support for {feature}", "Documentation for {feature} is out of date",
    "Question: how to configure {feature}?", "{thing} is slow with {cond}", "Crash on startup after {event}",
    "Improve error message for {thing}", "404 for links in {thing}", "Better defaults for {feature}",
    "Consider removing {feature}", "Typo in the {thing} page", "Flaky test in {thing}",
    "Keyboard navigation broken in {thing}", "Update dependencies for {feature}", "Homepage content for {feature}",
]
MR_TEMPLATES = ["Fix {thing} when {cond}", "Add {feature}", "Refactor {thing}", "Update docs for {feature}",
                "Bump dependencies", "Improve {thing} performance", "Draft: rework {feature}",
                "Add tests for {thing}", "Verify {feature} inputs", "Colour utility for {thing}"]
THINGS = ["the CLI", "the settings page", "the parser", "the build script", "the installer", "the README",
          "the search box", "the API client", "the dark theme", "the export dialog", "the sidebar", "the cache",
          "the login form", "the release pipeline", "the plugin loader", "the date picker"]
CONDITIONS = ["the path has spaces", "the input is empty", "running on Windows", "offline", "large files",
              "the locale is not English", "two tabs are open", "the config file is missing", "using Python 3.12"]
FEATURES = ["dark mode", "custom themes", "proxy settings", "incremental builds", "plugins", "localisation",
            "screen readers", "CSV export", "SSO login", "keyboard shortcuts", "reduced motion", "webhooks"]
EVENTS = ["the last update", "changing the theme", "a fresh install", "upgrading Node", "enabling plugins"]
NOTES = ["Thanks for the report, I can reproduce this.", "Could you share the full log?", "Fixed in the latest commit.",
         "I would like to work on this.", "This looks like a duplicate.", "Any update on this?",
         "Confirmed on my machine as well.", "Good idea", "LGTM", "Please add a test for this case.",
         "Closing as it is no longer relevant.", "I opened a merge request for this."]
COMMIT_MESSAGES = ["Fix typo in README", "Add unit tests", "Refactor configuration loading", "Update dependencies",
                   "Improve error handling", "Add CI pipeline", "Remove unused code", "Bump version",
                   "Fix lint warnings", "Add screenshots", "Document installation steps", "Fix off-by-one error",
                   "Speed up startup", "Add changelog entry", "Merge branch 'develop' into 'main'",
                   "Support custom themes", "Fix broken links", "Add contributing guide", "Initial commit"]
BRANCHES = ["develop", "feature/dark-mode", "fix/parser-crash", "docs/update", "redesign", "release/1.2",
            "feature/plugins", "chore/deps", "experiment/cache"]
STATUS = [("coffee", "Working from a cafe"), ("palm_tree", "On vacation"), ("speech_balloon", "Happy to help"), ("", "")]
