-- Forum (Postmill-like) schema. Scores are cached on rows (upvotes/downvotes) and kept in step with the vote
-- tables by the app, because listings sort by them on every page view.
CREATE TABLE users (
    id INTEGER PRIMARY KEY,
    username TEXT NOT NULL UNIQUE COLLATE NOCASE,
    password_hash TEXT NOT NULL,
    biography TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
);
CREATE TABLE forums (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE COLLATE NOCASE,
    title TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    sidebar TEXT NOT NULL DEFAULT '',
    creator_id INTEGER REFERENCES users(id),
    created_at TEXT NOT NULL
);
CREATE TABLE submissions (
    id INTEGER PRIMARY KEY,
    forum_id INTEGER NOT NULL REFERENCES forums(id),
    user_id INTEGER NOT NULL REFERENCES users(id),
    title TEXT NOT NULL,
    body TEXT NOT NULL DEFAULT '',
    url TEXT,
    image TEXT,
    created_at TEXT NOT NULL,
    edited_at TEXT,
    upvotes INTEGER NOT NULL DEFAULT 0,
    downvotes INTEGER NOT NULL DEFAULT 0,
    hot REAL NOT NULL DEFAULT 0
);
CREATE INDEX submissions_forum ON submissions(forum_id, created_at);
CREATE INDEX submissions_user ON submissions(user_id);
CREATE INDEX submissions_hot ON submissions(hot);
CREATE TABLE comments (
    id INTEGER PRIMARY KEY,
    submission_id INTEGER NOT NULL REFERENCES submissions(id) ON DELETE CASCADE,
    parent_id INTEGER REFERENCES comments(id) ON DELETE CASCADE,
    user_id INTEGER NOT NULL REFERENCES users(id),
    body TEXT NOT NULL,
    created_at TEXT NOT NULL,
    edited_at TEXT,
    upvotes INTEGER NOT NULL DEFAULT 0,
    downvotes INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX comments_submission ON comments(submission_id);
CREATE INDEX comments_user ON comments(user_id);
CREATE TABLE submission_votes (
    user_id INTEGER NOT NULL REFERENCES users(id),
    submission_id INTEGER NOT NULL REFERENCES submissions(id) ON DELETE CASCADE,
    choice INTEGER NOT NULL CHECK (choice IN (-1, 1)),
    PRIMARY KEY (user_id, submission_id)
);
CREATE TABLE comment_votes (
    user_id INTEGER NOT NULL REFERENCES users(id),
    comment_id INTEGER NOT NULL REFERENCES comments(id) ON DELETE CASCADE,
    choice INTEGER NOT NULL CHECK (choice IN (-1, 1)),
    PRIMARY KEY (user_id, comment_id)
);
CREATE TABLE subscriptions (
    user_id INTEGER NOT NULL REFERENCES users(id),
    forum_id INTEGER NOT NULL REFERENCES forums(id) ON DELETE CASCADE,
    created_at TEXT NOT NULL,
    PRIMARY KEY (user_id, forum_id)
);
