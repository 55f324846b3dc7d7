# Joins the two first migrations of transfer, made on two branches at once: the exports over
# HTTP (0001_exports) and the GitHub importer's links (0001_github).

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("transfer", "0001_exports"),
        ("transfer", "0001_github"),
    ]

    operations = []
