import * as z from 'zod';
import { type IntegrationConfigSchema, secretField } from '../schema.ts';

/** A stand-in for the email integration's manifest, for config tests until real manifests load. */
export const emailType: IntegrationConfigSchema = {
  type: 'email',
  settings: {
    imap_server: z.string().min(1),
    port: z.int().optional(),
    username: z.string().optional(),
    password: secretField.optional(),
  },
  platforms: { inbox: {} },
};

export const fixturesDir = new URL('../../fixtures/', import.meta.url);
