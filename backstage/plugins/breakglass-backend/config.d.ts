export interface Config {
  /** Tower's break-glass plugin. */
  breakglass: {
    /**
     * The relay's base address, e.g. https://breakglass.example.com: only
     * Backstage's backend talks to it, never the browser.
     */
    relayURL: string;
    /** Who hears about sessions in Backstage's notifications, as entity references (groups or users). */
    notify?: {
      /** Told of every new request, to approve or deny it. */
      approvers?: string[];
      /** Told of every broken glass, to review it. */
      reviewers?: string[];
    };
  };
}
