import type { Texts } from "./languages.ts";

const en = {
  "common.cancel": "Cancel",
  "common.close": "Close",
  "common.delete": "Delete",
  "common.save": "Save",
  "common.retry": "Try again",
  "common.loading": "Loading…",
  "common.error.network": "Zona could not be reached. Check your connection and try again.",
  "common.error.rateLimited": "Too many requests. Try again in {seconds} seconds.",
  "common.error.server": "Something went wrong (reference {id}). Try again later.",
  "common.error.generic": "Something went wrong. Try again later.",
  "common.language": "Language",
  "common.skipToContent": "Skip to content",
};

/** Texts used everywhere in the web chat. */
export const COMMON_TEXT: Texts<typeof en> = {
  en,
  it: {
    "common.cancel": "Annulla",
    "common.close": "Chiudi",
    "common.delete": "Elimina",
    "common.save": "Salva",
    "common.retry": "Riprova",
    "common.loading": "Caricamento…",
    "common.error.network": "Zona non è raggiungibile. Controlla la connessione e riprova.",
    "common.error.rateLimited": "Troppe richieste. Riprova tra {seconds} secondi.",
    "common.error.server": "Qualcosa è andato storto (riferimento {id}). Riprova più tardi.",
    "common.error.generic": "Qualcosa è andato storto. Riprova più tardi.",
    "common.language": "Lingua",
    "common.skipToContent": "Vai al contenuto",
  },
  de: {
    "common.cancel": "Abbrechen",
    "common.close": "Schliessen",
    "common.delete": "Löschen",
    "common.save": "Speichern",
    "common.retry": "Erneut versuchen",
    "common.loading": "Wird geladen…",
    "common.error.network":
      "Zona ist nicht erreichbar. Prüfen Sie die Verbindung und versuchen Sie es erneut.",
    "common.error.rateLimited": "Zu viele Anfragen. Versuchen Sie es in {seconds} Sekunden erneut.",
    "common.error.server": "Etwas ist schiefgelaufen (Referenz {id}). Versuchen Sie es später erneut.",
    "common.error.generic": "Etwas ist schiefgelaufen. Versuchen Sie es später erneut.",
    "common.language": "Sprache",
    "common.skipToContent": "Zum Inhalt springen",
  },
  fr: {
    "common.cancel": "Annuler",
    "common.close": "Fermer",
    "common.delete": "Supprimer",
    "common.save": "Enregistrer",
    "common.retry": "Réessayer",
    "common.loading": "Chargement…",
    "common.error.network": "Zona est injoignable. Vérifiez votre connexion et réessayez.",
    "common.error.rateLimited": "Trop de requêtes. Réessayez dans {seconds} secondes.",
    "common.error.server": "Une erreur est survenue (référence {id}). Réessayez plus tard.",
    "common.error.generic": "Une erreur est survenue. Réessayez plus tard.",
    "common.language": "Langue",
    "common.skipToContent": "Aller au contenu",
  },
};
