"""Sign-in forms of the pages (the admin's, the OAuth consent's): behind the API login's
protection (``accounts.login_protection``), with the same counters per email and per address,
so guesses made on any of them add up, and a locked email or address is refused everywhere,
even with the right password, before the password is checked."""

from django import forms
from django.contrib.auth.forms import AuthenticationForm

from collab.api.exceptions import RateLimited, Unauthorized
from collab.api.ratelimit import client_address

from . import services


class ProtectedSignIn(AuthenticationForm):
    def clean(self):
        email = self.cleaned_data.get("username")
        password = self.cleaned_data.get("password")
        if email is not None and password:
            try:
                self.user_cache = services.auth_credentials_check(
                    email=email,
                    password=password,
                    client_address=client_address(self.request),
                    request=self.request,
                )
            except RateLimited as refused:
                raise forms.ValidationError(refused.message, code="rate_limited") from None
            except Unauthorized:
                raise self.get_invalid_login_error() from None
            self.confirm_login_allowed(self.user_cache)
        return self.cleaned_data
