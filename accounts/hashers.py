"""How the secrets the service makes are stored: an OAuth app's client secret, 128 random
characters, is kept as a salted SHA-256. Key stretching (PBKDF2, the passwords' hasher) is for
what people choose and attackers can guess; a random secret of hundreds of bits has nothing to
guess, and stretching it would cost every token request of a confidential app a second of
CPU, which anyone could make the server spend."""

import hashlib

from django.contrib.auth.hashers import BasePasswordHasher, mask_hash
from django.utils.crypto import constant_time_compare


class SecretHasher(BasePasswordHasher):
    algorithm = "secret_sha256"

    def encode(self, password, salt):
        self._check_encode_args(password, salt)
        digest = hashlib.sha256(f"{salt}{password}".encode()).hexdigest()
        return f"{self.algorithm}${salt}${digest}"

    def decode(self, encoded):
        algorithm, salt, digest = encoded.split("$", 2)
        assert algorithm == self.algorithm
        return {"algorithm": algorithm, "hash": digest, "salt": salt}

    def verify(self, password, encoded):
        decoded = self.decode(encoded)
        return constant_time_compare(encoded, self.encode(password, decoded["salt"]))

    def safe_summary(self, encoded):
        decoded = self.decode(encoded)
        return {
            "algorithm": decoded["algorithm"],
            "salt": mask_hash(decoded["salt"], show=2),
            "hash": mask_hash(decoded["hash"]),
        }

    def must_update(self, encoded):
        return False

    def harden_runtime(self, password, encoded):
        pass
