import { hashPassword, MAX_PASSWORD_LENGTH } from "../auth/passwords.ts";
import { LANGUAGES, type Language } from "../config/names.ts";
import { conflict, invalidRequest, itemNotFound } from "../errors/catalogue.ts";
import { isRowId } from "../store/ids.ts";
import type { AccountRow, AccountsRepository } from "../store/repositories/accounts.ts";

/** What is needed to open an account. */
export interface NewAccount {
  email: string;
  password?: string;
  language?: string;
  emailVerified?: boolean;
}

// Deliberately loose: one @, no spaces, a dot in the domain. Deliverability is proven by verification mail.
const EMAIL = /^[^\s@]{1,64}@[^\s@]+\.[^\s@]{2,}$/;
const MIN_PASSWORD_LENGTH = 8;

/** Opening, finding and changing accounts. */
export class AccountsService {
  private readonly repo: AccountsRepository;
  private readonly defaultLanguage: Language;
  private readonly onChange: () => void;
  /** `onChange` runs after an account is disabled or enabled (caches of its keys must forget it). */
  constructor(repo: AccountsRepository, defaultLanguage: Language, onChange: () => void = () => {}) {
    this.repo = repo;
    this.defaultLanguage = defaultLanguage;
    this.onChange = onChange;
  }

  async create(input: NewAccount): Promise<AccountRow> {
    const email = input.email.trim();
    if (email.length > 254 || !EMAIL.test(email)) {
      throw invalidRequest("'email' must be an email address.", { param: "email", code: "invalid_email" });
    }
    const language = input.language ?? this.defaultLanguage;
    if (!(LANGUAGES as readonly string[]).includes(language)) {
      throw invalidRequest(`'language' must be one of ${LANGUAGES.join(", ")}.`, { param: "language" });
    }
    let passwordHash: string | null = null;
    if (input.password !== undefined) {
      if (input.password.length < MIN_PASSWORD_LENGTH || input.password.length > MAX_PASSWORD_LENGTH) {
        throw invalidRequest(
          `'password' must be ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters long.`,
          { param: "password", code: "invalid_password" },
        );
      }
      passwordHash = await hashPassword(input.password);
    }
    const row = await this.repo.insert({
      email,
      passwordHash,
      language,
      emailVerified: input.emailVerified ?? false,
    });
    if (!row) throw conflict(`An account with the email ${email} exists already.`, "email_taken", "email");
    return row;
  }

  /** The account, or 404. */
  async get(id: string): Promise<AccountRow> {
    const row = isRowId(id) ? await this.repo.findById(id) : undefined;
    if (!row) throw itemNotFound(`Account ${id} not found.`);
    return row;
  }

  async findByEmail(email: string): Promise<AccountRow | undefined> {
    return this.repo.findByEmail(email.trim());
  }

  async list(options: { limit: number; offset: number }): Promise<AccountRow[]> {
    return this.repo.list(options);
  }

  async setDisabled(id: string, disabled: boolean): Promise<AccountRow> {
    await this.get(id);
    const row = await this.repo.update(id, { disabled });
    if (!row) throw itemNotFound(`Account ${id} not found.`);
    this.onChange();
    return row;
  }

  /** Sets the account's language: its mails, its default voice and the web chat's texts. */
  async setLanguage(id: string, language: Language): Promise<AccountRow> {
    await this.get(id);
    const row = await this.repo.update(id, { language });
    if (!row) throw itemNotFound(`Account ${id} not found.`);
    return row;
  }

  async markEmailVerified(id: string): Promise<AccountRow> {
    await this.get(id);
    const row = await this.repo.update(id, { emailVerified: true });
    if (!row) throw itemNotFound(`Account ${id} not found.`);
    return row;
  }
}
