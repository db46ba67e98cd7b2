// Generated from github's manifest.yaml by `npm run generate:settings`: do not edit. A test fails
// when this file and the manifest disagree.

import type { Secret } from '@assistant/sdk';

/** The settings of an instance of the github integration (its keys in config.yaml beside type and name). */
export interface GithubSettings {
  /** A personal access token (fine-grained or classic): `!secret name` from secrets.yaml. Or a GitHub App: app_id, installation_id and private_key. */
  token?: Secret;
  /** A GitHub App's id, to authenticate as its installation instead of with a token. */
  app_id?: number;
  /** The App's installation id (in the URL of its settings page on the account or organisation). */
  installation_id?: number;
  /** The App's private key (the PEM file's text): `!secret name`. */
  private_key?: Secret;
  /** The REST API root: https://HOST/api/v3 for GitHub Enterprise Server. */
  api_url: string;
  /** Your login: whose review requests, assignments and mentions count. Default: the token's own user; required with a GitHub App. */
  user?: string;
  /** The secret of the repository or organisation webhook that sends deliveries to /api/integrations/<name>/hooks/events. */
  webhook_secret?: Secret;
  /** Only items in these organisations or users' repositories (with `repos`: in either). */
  orgs: string[];
  /** Only items in these repositories, `owner/name`. */
  repos: string[];
  /** At most this many items per search, the most recently updated first (GitHub's search stops at 1,000). */
  limit: number;
  /** How many of the latest comments an item's note keeps (and the classifier reads). */
  comments: number;
  /** How long one API request may take before it fails. Milliseconds. */
  request_timeout: number;
}

/** The settings of the pull_requests platform of an instance of the github integration. */
export interface GithubPullRequestsPlatformSettings {
  /** Which pull requests the search finds: your review requested, assigned to you, written by you, mentioning you. */
  involves: ('review_requested' | 'assigned' | 'authored' | 'mentioned')[];
}

/** The settings of the issues platform of an instance of the github integration. */
export interface GithubIssuesPlatformSettings {
  /** Which issues the search finds: assigned to you, written by you, mentioning you. */
  involves: ('assigned' | 'authored' | 'mentioned')[];
}
