import type { Language } from "../config/names.ts";

/** The subject and text of a mail, before it is addressed. */
export interface MailText {
  subject: string;
  text: string;
}

type TextLanguage = "it" | "en" | "de" | "fr";

// Romansh speakers read Italian mail here until texts of their own are written.
function textLanguage(language: Language | string): TextLanguage {
  return language === "en" || language === "de" || language === "fr" ? language : "it";
}

const VERIFY: Record<TextLanguage, (link: string) => MailText> = {
  it: (link) => ({
    subject: "Conferma il tuo indirizzo email",
    text: `Ciao,\n\nper confermare il tuo indirizzo email apri questo link:\n\n${link}\n\nIl link vale 7 giorni. Se non hai creato un account, ignora questa email.\n`,
  }),
  en: (link) => ({
    subject: "Confirm your email address",
    text: `Hello,\n\nto confirm your email address, open this link:\n\n${link}\n\nThe link works for 7 days. If you did not create an account, ignore this mail.\n`,
  }),
  de: (link) => ({
    subject: "Bestätigen Sie Ihre E-Mail-Adresse",
    text: `Guten Tag\n\nUm Ihre E-Mail-Adresse zu bestätigen, öffnen Sie diesen Link:\n\n${link}\n\nDer Link ist 7 Tage gültig. Falls Sie kein Konto eröffnet haben, ignorieren Sie diese E-Mail.\n`,
  }),
  fr: (link) => ({
    subject: "Confirmez votre adresse e-mail",
    text: `Bonjour,\n\npour confirmer votre adresse e-mail, ouvrez ce lien :\n\n${link}\n\nLe lien est valable 7 jours. Si vous n'avez pas créé de compte, ignorez cet e-mail.\n`,
  }),
};

const RESET: Record<TextLanguage, (link: string) => MailText> = {
  it: (link) => ({
    subject: "Reimposta la tua password",
    text: `Ciao,\n\nper scegliere una nuova password apri questo link:\n\n${link}\n\nIl link vale un'ora e si usa una volta sola. Se non hai chiesto tu di reimpostare la password, ignora questa email: la password resta quella di prima.\n`,
  }),
  en: (link) => ({
    subject: "Reset your password",
    text: `Hello,\n\nto choose a new password, open this link:\n\n${link}\n\nThe link works for one hour and only once. If you did not ask to reset your password, ignore this mail: your password stays as it is.\n`,
  }),
  de: (link) => ({
    subject: "Passwort zurücksetzen",
    text: `Guten Tag\n\nUm ein neues Passwort zu wählen, öffnen Sie diesen Link:\n\n${link}\n\nDer Link ist eine Stunde gültig und funktioniert nur einmal. Falls Sie das nicht verlangt haben, ignorieren Sie diese E-Mail: Ihr Passwort bleibt unverändert.\n`,
  }),
  fr: (link) => ({
    subject: "Réinitialisez votre mot de passe",
    text: `Bonjour,\n\npour choisir un nouveau mot de passe, ouvrez ce lien :\n\n${link}\n\nLe lien est valable une heure et une seule fois. Si vous n'avez pas fait cette demande, ignorez cet e-mail : votre mot de passe reste inchangé.\n`,
  }),
};

/** The verification mail in the account's language, with the web chat's link. */
export function verificationMail(language: Language | string, link: string): MailText {
  return VERIFY[textLanguage(language)](link);
}

/** The password-reset mail in the account's language, with the web chat's link. */
export function passwordResetMail(language: Language | string, link: string): MailText {
  return RESET[textLanguage(language)](link);
}

/** `${public_url}/verify-email?token=...` and the like: a page of the web chat that calls the API with the token. */
export function mailLink(publicUrl: string, page: "verify-email" | "reset-password", token: string): string {
  return `${publicUrl.replace(/\/+$/, "")}/${page}?token=${encodeURIComponent(token)}`;
}
