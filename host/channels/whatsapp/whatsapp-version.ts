/**
 * The WhatsApp Web version the socket announces, pinned: asking WhatsApp for the latest one
 * (`fetchLatestBaileysVersion`) is a network call in the connection path, on every reconnect. It is the
 * version Baileys 7.0.0-rc14 ships with; `carapace doctor` checks that the installed Baileys is the one
 * this pin belongs to, and reports a connection WhatsApp refused as outdated.
 */
export const WHATSAPP_WEB_VERSION: [number, number, number] = [2, 3000, 1043857760];

/** The Baileys release the pin above belongs to; package.json pins the dependency exactly. */
export const BAILEYS_VERSION = '7.0.0-rc14';

export const whatsappWebVersionText = (): string => WHATSAPP_WEB_VERSION.join('.');
