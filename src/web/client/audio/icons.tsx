// Inline icons (no emoji: not every machine has an emoji font). They take the text colour.

/** A microphone. */
export function MicrophoneIcon() {
  return (
    <svg class="audio-icon" viewBox="0 0 24 24" width="20" height="20" aria-hidden="true" focusable="false">
      <path
        fill="currentColor"
        d="M12 14a3 3 0 0 0 3-3V5a3 3 0 0 0-6 0v6a3 3 0 0 0 3 3Zm5-3a5 5 0 0 1-10 0H5a7 7 0 0 0 6 6.92V21h2v-3.08A7 7 0 0 0 19 11h-2Z"
      />
    </svg>
  );
}

/** A square: stop. */
export function StopIcon() {
  return (
    <svg class="audio-icon" viewBox="0 0 24 24" width="20" height="20" aria-hidden="true" focusable="false">
      <rect fill="currentColor" x="6" y="6" width="12" height="12" rx="2" />
    </svg>
  );
}

/** A loudspeaker with sound waves. */
export function SpeakerIcon() {
  return (
    <svg class="audio-icon" viewBox="0 0 24 24" width="18" height="18" aria-hidden="true" focusable="false">
      <path fill="currentColor" d="M4 9v6h4l5 4V5L8 9H4Z" />
      <path
        fill="none"
        stroke="currentColor"
        stroke-width="2"
        stroke-linecap="round"
        d="M16 9a4 4 0 0 1 0 6M18.5 6.5a7.5 7.5 0 0 1 0 11"
      />
    </svg>
  );
}

/** A turning circle: busy. */
export function SpinnerIcon() {
  return (
    <svg
      class="audio-icon audio-spinner"
      viewBox="0 0 24 24"
      width="18"
      height="18"
      aria-hidden="true"
      focusable="false"
    >
      <circle
        fill="none"
        stroke="currentColor"
        stroke-opacity="0.25"
        stroke-width="3"
        cx="12"
        cy="12"
        r="9"
      />
      <path
        fill="none"
        stroke="currentColor"
        stroke-width="3"
        stroke-linecap="round"
        d="M12 3a9 9 0 0 1 9 9"
      />
    </svg>
  );
}

/** A cross: close. */
export function CloseIcon() {
  return (
    <svg class="audio-icon" viewBox="0 0 24 24" width="14" height="14" aria-hidden="true" focusable="false">
      <path
        fill="none"
        stroke="currentColor"
        stroke-width="2.5"
        stroke-linecap="round"
        d="M6 6l12 12M18 6 6 18"
      />
    </svg>
  );
}
