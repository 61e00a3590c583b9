"""Static bearer tokens (upstream: apiserver/pkg/authentication/token/tokenfile): `--token-auth-file`, a CSV
of `token,user,uid[,"group1,group2"]`, and the admin token pyk8s keeps in its PKI directory."""

from __future__ import annotations

import csv
import logging
from pathlib import Path

from . import Credentials, UserInfo
from .bearertoken import BearerTokenAuthenticator, Response

log = logging.getLogger("pyk8s.apiserver.authn")


class TokenFileError(ValueError):
    """A token file that cannot be read (the API server does not start)."""


class TokenAuthenticator:
    """Exact tokens, each one user (no audiences, no extra values)."""

    def __init__(self, tokens: dict[str, UserInfo]) -> None:
        self.tokens = tokens

    @classmethod
    def from_csv(cls, path: str | Path) -> TokenAuthenticator:
        """The tokens of a `--token-auth-file` (upstream: NewCSV, with its messages)."""
        try:
            with open(path, newline="", encoding="utf-8") as f:
                records = list(csv.reader(f, strict=True))
        except OSError as err:
            raise TokenFileError(f"open {path}: {(err.strerror or str(err)).lower()}") from None  # Go's *PathError
        except (UnicodeDecodeError, csv.Error) as err:
            raise TokenFileError(f"token file '{path}': {err}") from None
        tokens: dict[str, UserInfo] = {}
        number = 0
        for record in records:
            if not record:
                continue  # blank lines are no records, as Go's csv reader skips them
            if len(record) < 3:
                raise TokenFileError(
                    f"token file '{path}' must have at least 3 columns (token, user name, user uid), found {len(record)}"
                )
            number += 1
            token, name, uid = record[0], record[1], record[2]
            if not token:
                log.warning("empty token has been found in token file '%s', record number '%d'", path, number)
                continue
            if token in tokens:
                log.warning("duplicate token has been found in token file '%s', record number '%d'", path, number)
            groups = tuple(record[3].split(",")) if len(record) >= 4 else ()
            tokens[token] = UserInfo(name, uid, groups)
        return cls(tokens)

    def authenticate_token(self, token: str, audiences: tuple[str, ...]) -> Response | None:
        user = self.tokens.get(token)
        return Response(user) if user is not None else None

    def authenticate(self, request: Credentials) -> UserInfo | None:
        """These tokens alone as a request authenticator (`Authorization: Bearer`)."""
        return BearerTokenAuthenticator(self).authenticate(request)
