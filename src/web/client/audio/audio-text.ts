import type { Texts } from "../i18n/languages.ts";

const en = {
  "audio.dictate": "Dictate",
  "audio.stopDictation": "Stop dictation",
  "audio.startingMicrophone": "Starting the microphone…",
  "audio.transcribing": "Transcribing…",
  "audio.readAloud": "Read aloud",
  "audio.stopReading": "Stop reading",
  "audio.preparingSpeech": "Preparing the audio…",
  "audio.error.unsupported": "This browser cannot record audio.",
  "audio.error.permission":
    "Microphone access was refused. Allow it in the browser's settings for this site to dictate.",
  "audio.error.noMicrophone": "No microphone was found.",
  "audio.error.microphoneBusy": "The microphone could not be started. Another application may be using it.",
  "audio.error.nothingRecorded": "Nothing was recorded. Try again.",
  "audio.error.nothingHeard": "No speech was recognised. Try again and speak closer to the microphone.",
  "audio.error.transcribeRefused": "The recording could not be transcribed.",
  "audio.error.transcribeUnavailable": "Transcription is not available right now. Try again later.",
  "audio.error.nothingToRead": "This answer has no text to read aloud.",
  "audio.error.inputRefused": "This answer cannot be read aloud: it did not pass the content check.",
  "audio.error.checkUnavailable":
    "The content check is not available right now, so the answer cannot be read aloud. Try again later.",
  "audio.error.speechUnavailable": "Reading aloud is not available right now. Try again later.",
  "audio.error.speechFailed": "The answer could not be read aloud.",
  "audio.error.playback": "The audio could not be played in this browser.",
};

/** Texts of dictation and reading aloud. */
export const AUDIO_TEXT: Texts<typeof en> = {
  en,
  it: {
    "audio.dictate": "Detta",
    "audio.stopDictation": "Termina la dettatura",
    "audio.startingMicrophone": "Avvio del microfono…",
    "audio.transcribing": "Trascrizione in corso…",
    "audio.readAloud": "Leggi ad alta voce",
    "audio.stopReading": "Interrompi la lettura",
    "audio.preparingSpeech": "Preparazione dell'audio…",
    "audio.error.unsupported": "Questo browser non può registrare audio.",
    "audio.error.permission":
      "L'accesso al microfono è stato negato. Consentilo nelle impostazioni del browser per questo sito per poter dettare.",
    "audio.error.noMicrophone": "Nessun microfono trovato.",
    "audio.error.microphoneBusy":
      "Non è stato possibile avviare il microfono. Forse lo sta usando un'altra applicazione.",
    "audio.error.nothingRecorded": "Non è stato registrato nulla. Riprova.",
    "audio.error.nothingHeard":
      "Non è stato riconosciuto alcun parlato. Riprova parlando più vicino al microfono.",
    "audio.error.transcribeRefused": "Non è stato possibile trascrivere la registrazione.",
    "audio.error.transcribeUnavailable": "La trascrizione non è disponibile al momento. Riprova più tardi.",
    "audio.error.nothingToRead": "Questa risposta non contiene testo da leggere.",
    "audio.error.inputRefused":
      "Questa risposta non può essere letta ad alta voce: non ha superato il controllo dei contenuti.",
    "audio.error.checkUnavailable":
      "Il controllo dei contenuti non è disponibile al momento, quindi la risposta non può essere letta. Riprova più tardi.",
    "audio.error.speechUnavailable":
      "La lettura ad alta voce non è disponibile al momento. Riprova più tardi.",
    "audio.error.speechFailed": "Non è stato possibile leggere la risposta ad alta voce.",
    "audio.error.playback": "Questo browser non è riuscito a riprodurre l'audio.",
  },
  de: {
    "audio.dictate": "Diktieren",
    "audio.stopDictation": "Diktat beenden",
    "audio.startingMicrophone": "Mikrofon wird gestartet…",
    "audio.transcribing": "Wird transkribiert…",
    "audio.readAloud": "Vorlesen",
    "audio.stopReading": "Vorlesen beenden",
    "audio.preparingSpeech": "Audio wird vorbereitet…",
    "audio.error.unsupported": "Dieser Browser kann keine Audioaufnahmen machen.",
    "audio.error.permission":
      "Der Zugriff auf das Mikrofon wurde verweigert. Erlauben Sie ihn in den Browser-Einstellungen für diese Website, um zu diktieren.",
    "audio.error.noMicrophone": "Es wurde kein Mikrofon gefunden.",
    "audio.error.microphoneBusy":
      "Das Mikrofon konnte nicht gestartet werden. Vielleicht wird es von einer anderen Anwendung verwendet.",
    "audio.error.nothingRecorded": "Es wurde nichts aufgenommen. Versuchen Sie es erneut.",
    "audio.error.nothingHeard":
      "Es wurde keine Sprache erkannt. Versuchen Sie es erneut und sprechen Sie näher am Mikrofon.",
    "audio.error.transcribeRefused": "Die Aufnahme konnte nicht transkribiert werden.",
    "audio.error.transcribeUnavailable":
      "Die Transkription ist zurzeit nicht verfügbar. Versuchen Sie es später erneut.",
    "audio.error.nothingToRead": "Diese Antwort enthält keinen Text zum Vorlesen.",
    "audio.error.inputRefused":
      "Diese Antwort kann nicht vorgelesen werden: Sie hat die Inhaltsprüfung nicht bestanden.",
    "audio.error.checkUnavailable":
      "Die Inhaltsprüfung ist zurzeit nicht verfügbar, daher kann die Antwort nicht vorgelesen werden. Versuchen Sie es später erneut.",
    "audio.error.speechUnavailable":
      "Das Vorlesen ist zurzeit nicht verfügbar. Versuchen Sie es später erneut.",
    "audio.error.speechFailed": "Die Antwort konnte nicht vorgelesen werden.",
    "audio.error.playback": "Das Audio konnte in diesem Browser nicht abgespielt werden.",
  },
  fr: {
    "audio.dictate": "Dicter",
    "audio.stopDictation": "Arrêter la dictée",
    "audio.startingMicrophone": "Démarrage du microphone…",
    "audio.transcribing": "Transcription en cours…",
    "audio.readAloud": "Lire à voix haute",
    "audio.stopReading": "Arrêter la lecture",
    "audio.preparingSpeech": "Préparation de l'audio…",
    "audio.error.unsupported": "Ce navigateur ne peut pas enregistrer d'audio.",
    "audio.error.permission":
      "L'accès au microphone a été refusé. Autorisez-le dans les réglages du navigateur pour ce site afin de dicter.",
    "audio.error.noMicrophone": "Aucun microphone n'a été trouvé.",
    "audio.error.microphoneBusy":
      "Le microphone n'a pas pu être démarré. Une autre application l'utilise peut-être.",
    "audio.error.nothingRecorded": "Rien n'a été enregistré. Réessayez.",
    "audio.error.nothingHeard":
      "Aucune parole n'a été reconnue. Réessayez en parlant plus près du microphone.",
    "audio.error.transcribeRefused": "L'enregistrement n'a pas pu être transcrit.",
    "audio.error.transcribeUnavailable":
      "La transcription n'est pas disponible pour le moment. Réessayez plus tard.",
    "audio.error.nothingToRead": "Cette réponse ne contient pas de texte à lire.",
    "audio.error.inputRefused":
      "Cette réponse ne peut pas être lue à voix haute : elle n'a pas passé le contrôle du contenu.",
    "audio.error.checkUnavailable":
      "Le contrôle du contenu n'est pas disponible pour le moment, la réponse ne peut donc pas être lue. Réessayez plus tard.",
    "audio.error.speechUnavailable":
      "La lecture à voix haute n'est pas disponible pour le moment. Réessayez plus tard.",
    "audio.error.speechFailed": "La réponse n'a pas pu être lue à voix haute.",
    "audio.error.playback": "Ce navigateur n'a pas pu lire l'audio.",
  },
};
