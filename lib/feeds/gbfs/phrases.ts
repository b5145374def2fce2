/**
 * The few sentences the GBFS files generate (price descriptions, alerts), in the zone's language so
 * that a text's language tag is true. A language without a table here gets English, tagged `en`.
 */
interface Phrases {
  price(start: string, perMinute: string): string;
  sleepSummary(zone: string): string;
  sleepDescription(zone: string): string;
  closedSummary(zone: string): string;
  closedDescription(zone: string): string;
}

const TABLES: Record<string, Phrases> = {
  en: {
    price: (s, m) => `${s} to unlock, then ${m} per minute`,
    sleepSummary: (z) => `${z} is in sleep mode`,
    sleepDescription: (z) => `Vehicles in ${z} cannot be rented during the nightly sleep time.`,
    closedSummary: (z) => `${z} is closed`,
    closedDescription: (z) => `Rentals cannot be started in ${z} until further notice.`,
  },
  de: {
    price: (s, m) => `${s} zum Entsperren, dann ${m} pro Minute`,
    sleepSummary: (z) => `${z} ist im Ruhemodus`,
    sleepDescription: (z) => `Fahrzeuge in ${z} können während der nächtlichen Ruhezeit nicht gemietet werden.`,
    closedSummary: (z) => `${z} ist geschlossen`,
    closedDescription: (z) => `In ${z} können bis auf Weiteres keine Fahrten gestartet werden.`,
  },
  da: {
    price: (s, m) => `${s} for at låse op, derefter ${m} pr. minut`,
    sleepSummary: (z) => `${z} er i dvaletilstand`,
    sleepDescription: (z) => `Køretøjer i ${z} kan ikke lejes i den natlige dvaletid.`,
    closedSummary: (z) => `${z} er lukket`,
    closedDescription: (z) => `Der kan indtil videre ikke startes ture i ${z}.`,
  },
};

/** The phrase table for a zone language and the language tag its texts carry. */
export function phrasesFor(language: string): { language: string; t: Phrases } {
  const base = language.split('-')[0];
  const t = TABLES[language] ?? TABLES[base];
  return t ? { language, t } : { language: 'en', t: TABLES.en };
}
