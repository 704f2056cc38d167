import {
  bigint,
  boolean,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  sql,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from "./drizzle.ts";

// Money is stored in micro-units (1e-6 of a CHF or of a credit) as integers: no float drift.

/** People and organisations that own keys and sign in to the app API. */
export const accounts = pgTable(
  "accounts",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    email: text("email").notNull(),
    passwordHash: text("password_hash"),
    emailVerified: boolean("email_verified").notNull().default(false),
    disabled: boolean("disabled").notNull().default(false),
    language: text("language").notNull().default("it"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex("accounts_email_lower_unique").on(sql`lower(${t.email})`)],
);

/** Keys of the key API; only a hash of the secret is kept. */
export const apiKeys = pgTable(
  "api_keys",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    accountId: uuid("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    displayPrefix: text("display_prefix").notNull(),
    keyHash: text("key_hash").notNull(),
    zones: text("zones").array(),
    monthlyLimitMicros: bigint("monthly_limit_micros", { mode: "number" }),
    /** The key's own tier limit (requests per minute, whatever the tier); null: the tier table's. */
    requestsPerMinute: integer("requests_per_minute"),
    expiresAt: timestamp("expires_at", { withTimezone: true }),
    revokedAt: timestamp("revoked_at", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("api_keys_key_hash_unique").on(t.keyHash),
    index("api_keys_account_idx").on(t.accountId),
  ],
);

/** Prepaid balance of an account; one row per account. */
export const creditBalances = pgTable("credit_balances", {
  accountId: uuid("account_id")
    .primaryKey()
    .references(() => accounts.id, { onDelete: "cascade" }),
  /**
   * What the operator credited, all changes together. The balance is credited - spent: usage only
   * ever adds to `spent` (as to a key's month), so a batch of records never rewrites what an
   * operator set, and copies of either merge without a lock.
   */
  creditedMicros: bigint("credited_micros", { mode: "number" }).notNull().default(0),
  /** The cost of every prepaid usage record of the account. */
  spentMicros: bigint("spent_micros", { mode: "number" }).notNull().default(0),
  /** Held by requests in flight; what may still be spent is credited - spent - held. */
  heldMicros: bigint("held_micros", { mode: "number" }).notNull().default(0),
  /**
   * Raised by every operator change of `credited`: where Redis holds a copy (several instances), a
   * copy of a newer version replaces an older one, whatever order they arrive in. (`spent` only
   * grows: the larger copy is the newer.)
   */
  version: bigint("version", { mode: "number" }).notNull().default(0),
  updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
});

/** Every operator change of credits, so none moves without a trace (usage is in its records). */
export const creditLedger = pgTable(
  "credit_ledger",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    accountId: uuid("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    kind: text("kind").notNull(),
    amountMicros: bigint("amount_micros", { mode: "number" }).notNull(),
    balanceAfterMicros: bigint("balance_after_micros", { mode: "number" }).notNull(),
    note: text("note"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("credit_ledger_account_idx").on(t.accountId, t.createdAt)],
);

/** What a key spent and holds in one calendar month (UTC), checked against its monthly limit. */
export const keyMonthSpend = pgTable(
  "key_month_spend",
  {
    keyId: uuid("key_id")
      .notNull()
      .references(() => apiKeys.id, { onDelete: "cascade" }),
    month: text("month").notNull(),
    spentMicros: bigint("spent_micros", { mode: "number" }).notNull().default(0),
    reservedMicros: bigint("reserved_micros", { mode: "number" }).notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.keyId, t.month] })],
);

/** The highest possible cost of a request in flight, held until it is settled or released. */
export const reservations = pgTable(
  "reservations",
  {
    requestId: text("request_id").primaryKey(),
    /** Null for requests of the app API, which a signed-in user makes without a key. */
    keyId: uuid("key_id"),
    accountId: uuid("account_id").notNull(),
    month: text("month").notNull(),
    amountMicros: bigint("amount_micros", { mode: "number" }).notNull(),
    /** Whether credits were held too (prepaid installation). */
    prepaid: boolean("prepaid").notNull(),
    endpoint: text("endpoint").notNull(),
    model: text("model"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
  },
  (t) => [index("reservations_expires_idx").on(t.expiresAt)],
);

/** One row per billed request, keyed by its request id. */
export const usageRecords = pgTable(
  "usage_records",
  {
    requestId: text("request_id").primaryKey(),
    /** Null for requests of the app API, which a signed-in user makes without a key. */
    keyId: uuid("key_id"),
    accountId: uuid("account_id").notNull(),
    month: text("month").notNull(),
    endpoint: text("endpoint").notNull(),
    model: text("model"),
    /** What was measured: tokens, seconds, characters, pictures. */
    units: jsonb("units").$type<Record<string, number>>().notNull(),
    costMicros: bigint("cost_micros", { mode: "number" }).notNull(),
    zone: text("zone"),
    machine: text("machine"),
    /** ok, partial (stream cut), failed, refused, expired. */
    outcome: text("outcome").notNull(),
    durationMs: integer("duration_ms"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index("usage_account_month_idx").on(t.accountId, t.month, t.createdAt),
    index("usage_key_month_idx").on(t.keyId, t.month, t.createdAt),
  ],
);

/** Models served on request that the operator has activated (loaded); the others answer 503. */
export const modelActivations = pgTable("model_activations", {
  modelId: text("model_id").primaryKey(),
  activatedAt: timestamp("activated_at", { withTimezone: true }).notNull().defaultNow(),
});

/** Refresh tokens of the app API; only a hash of the secret is kept. */
export const refreshTokens = pgTable(
  "refresh_tokens",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    accountId: uuid("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    tokenHash: text("token_hash").notNull(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    /** Set when the token was exchanged for a new pair: using it again revokes the account's tokens. */
    retiredAt: timestamp("retired_at", { withTimezone: true }),
    /** Set by logout, by reuse of a retired token and by a password reset. */
    revokedAt: timestamp("revoked_at", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex("refresh_tokens_hash_unique").on(t.tokenHash),
    index("refresh_tokens_account_idx").on(t.accountId),
  ],
);

/** One-time tokens sent by mail: email verification and password reset; only a hash is kept. */
export const emailTokens = pgTable(
  "email_tokens",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    accountId: uuid("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    /** `verify_email` or `reset_password`. */
    purpose: text("purpose").notNull(),
    tokenHash: text("token_hash").notNull(),
    expiresAt: timestamp("expires_at", { withTimezone: true }).notNull(),
    usedAt: timestamp("used_at", { withTimezone: true }),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex("email_tokens_hash_unique").on(t.tokenHash)],
);

/** Mail to send: kept here when no SMTP server is configured (the operator reads it with the CLI). */
export const mailOutbox = pgTable(
  "mail_outbox",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    recipient: text("recipient").notNull(),
    subject: text("subject").notNull(),
    body: text("body").notNull(),
    /** When an SMTP server took it; null while it waits in the outbox. */
    sentAt: timestamp("sent_at", { withTimezone: true }),
    lastError: text("last_error"),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index("mail_outbox_created_idx").on(t.createdAt)],
);

/** Secrets the service makes itself on first start and shares between instances (token signing). */
export const serviceSecrets = pgTable("service_secrets", {
  name: text("name").primaryKey(),
  value: text("value").notNull(),
  createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
});

/** Conversations of the app API, kept on the server. */
export const conversations = pgTable(
  "conversations",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    accountId: uuid("account_id")
      .notNull()
      .references(() => accounts.id, { onDelete: "cascade" }),
    title: text("title").notNull(),
    /** `default` until the automatic title replaces it, `user` once the user set one, `auto` after the job. */
    titleSource: text("title_source").notNull(),
    /** The label of the last message sent, or the one given at creation. */
    model: text("model").notNull(),
    /** The machine family the user prefers (`backend`), remembered for later messages. */
    backend: text("backend"),
    /** Archived in the web chat: left out of the list. */
    archived: boolean("archived").notNull().default(false),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp("updated_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index("conversations_account_updated_idx").on(t.accountId, t.updatedAt),
    // The title upkeep looks for these; few conversations keep the default title for long.
    index("conversations_untitled_idx").on(t.updatedAt).where(sql`${t.titleSource} = 'default'`),
  ],
);

/** Messages of a conversation, oldest first by `created_at` and then `seq`. */
export const conversationMessages = pgTable(
  "conversation_messages",
  {
    id: uuid("id").primaryKey().defaultRandom(),
    conversationId: uuid("conversation_id")
      .notNull()
      .references(() => conversations.id, { onDelete: "cascade" }),
    /** Order within the conversation. */
    seq: integer("seq").notNull(),
    role: text("role").notNull(),
    content: text("content").notNull(),
    model: text("model").notNull(),
    tier: text("tier").notNull(),
    promptTokens: integer("prompt_tokens").notNull().default(0),
    completionTokens: integer("completion_tokens").notNull().default(0),
    /** An answer its client stopped: the web chat marks it (the app API's message has no field for it). */
    stopped: boolean("stopped").notNull().default(false),
    createdAt: timestamp("created_at", { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [uniqueIndex("conversation_messages_order_unique").on(t.conversationId, t.seq)],
);

// The tables of files, jobs and knowledge bases live in files of their own; one schema for Drizzle.
export * from "./schema-jobs.ts";
export * from "./schema-knowledge.ts";
export * from "./schema-media.ts";
